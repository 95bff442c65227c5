package config

import (
	"fmt"
	"time"

	"github.com/trendfetch/trendfetch/internal/regions"
)

// Chart configures the chart=mostPopular call site.
type Chart struct {
	// Categories lists, per region code, videoCategoryId values to fetch as
	// separate narrowed charts in addition to the whole chart (since
	// 2025-07-21 the chart is built from Music "10", Movies "30" and Gaming
	// "20"). Empty: only the whole chart.
	Categories map[string][]string `yaml:"categories"`
}

// Search is one configured search.list query: `type=video&regionCode=..`.
// Each page costs the search.list cost (100 units in bucket units and 1 in
// bucket search by default); the found ids are then fetched with videos.list
// id= in batches of 50.
type Search struct {
	// Regions the query runs for (codes); empty means every configured region.
	Regions []string `yaml:"regions"`
	// Q is the query text (q).
	Q string `yaml:"q"`
	// Order is date, rating, relevance, title, videoCount or viewCount (default relevance).
	Order string `yaml:"order"`
	// PublishedAfter limits hits to videos published within this duration
	// before the run (e.g. 48h); 0 = no limit.
	PublishedAfter Duration `yaml:"published_after"`
	// MaxPages bounds the pages (of 50) fetched per run, 1-10 (default 1).
	MaxPages int `yaml:"max_pages"`
}

// Refresh configures an enrichment call site refreshed on a schedule.
type Refresh struct {
	// Enabled turns the call site on.
	Enabled bool `yaml:"enabled"`
	// Refresh is the age after which stored data is fetched again.
	Refresh Duration `yaml:"refresh"`
}

var searchOrders = map[string]bool{"": true, "date": true, "rating": true, "relevance": true, "title": true, "videoCount": true, "viewCount": true}

// completeIngest fills the searches' defaults (one page) and normalizes
// their region codes when valid; part of Complete.
func (c *Config) completeIngest() {
	for i, s := range c.Searches {
		if s.MaxPages == 0 {
			c.Searches[i].MaxPages = 1
		}
		if rs, err := regions.ParseList(s.Regions); err == nil {
			c.Searches[i].Regions = rs
		}
	}
}

// validateIngest checks the chart, searches, channels, categories and retry
// settings; it is called by Validate.
func (c *Config) validateIngest() error {
	for region, cats := range c.Chart.Categories {
		if _, err := regions.Parse(region); err != nil {
			return fmt.Errorf("config: chart.categories: %w", err)
		}
		for _, id := range cats {
			if id == "" || len(id) > 4 {
				return invalid("chart.categories."+region, id, "want a videoCategoryId such as 10")
			}
		}
	}
	for i, s := range c.Searches {
		f := fmt.Sprintf("searches[%d]", i)
		if s.Q == "" {
			return invalid(f+".q", `""`, "a search needs query text")
		}
		if !searchOrders[s.Order] {
			return invalid(f+".order", s.Order, "want date, rating, relevance, title, videoCount or viewCount")
		}
		if s.PublishedAfter < 0 {
			return invalid(f+".published_after", s.PublishedAfter.Std(), "must not be negative")
		}
		if s.MaxPages < 1 || s.MaxPages > 10 {
			return invalid(f+".max_pages", s.MaxPages, "must be 1-10 (each page costs the search.list cost)")
		}
		if _, err := regions.ParseList(s.Regions); err != nil {
			return fmt.Errorf("config: %s.regions: %w", f, err)
		}
	}
	for name, r := range map[string]Refresh{"channels": c.Channels, "categories": c.Categories} {
		if r.Enabled && r.Refresh <= 0 {
			return invalid(name+".refresh", r.Refresh.Std(), "must be > 0")
		}
	}
	if c.API.Retries < 0 || c.API.Retries > 10 {
		return invalid("api.retries", c.API.Retries, "must be 0-10 (every attempt costs quota)")
	}
	if c.API.RetryBackoff < 0 {
		return invalid("api.retry_backoff", c.API.RetryBackoff.Std(), "must not be negative")
	}
	return nil
}

// SearchesFor returns the searches configured for region.
func (c *Config) SearchesFor(region string) []Search {
	var out []Search
	for _, s := range c.Searches {
		if len(s.Regions) == 0 {
			out = append(out, s)
			continue
		}
		for _, r := range s.Regions {
			if r == region {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// defaultRefresh: channels daily, categories weekly (they rarely change).
const (
	defaultChannelsRefresh   = 24 * time.Hour
	defaultCategoriesRefresh = 7 * 24 * time.Hour
)
