package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/trendfetch/trendfetch/internal/regions"
)

// Chart is the `chart` section: per region code, the videoCategoryId values
// fetched as narrowed charts besides the whole chart.
type Chart struct {
	Categories map[string][]string `yaml:"categories"`
}

// Search is one entry of `searches`, a search.list query
// (type=video&regionCode=..) run for Regions (empty = every configured
// region): q, order (default relevance), videos published within
// PublishedAfter before the run (0 = any), at most MaxPages pages of 50
// (1-10, default 1). The ids found are fetched with videos.list id=.
type Search struct {
	Regions        []string `yaml:"regions"`
	Q              string   `yaml:"q"`
	Order          string   `yaml:"order"`
	PublishedAfter Duration `yaml:"published_after"`
	MaxPages       int      `yaml:"max_pages"`
}

// Refresh is an enrichment call site's section (`channels`, `categories`):
// whether it is on, and the age after which stored data is fetched again.
type Refresh struct {
	Enabled bool     `yaml:"enabled"`
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
		if len(s.Regions) == 0 || slices.Contains(s.Regions, region) {
			out = append(out, s)
		}
	}
	return out
}

// defaultRefresh: channels daily, categories weekly (they rarely change).
const (
	defaultChannelsRefresh   = 24 * time.Hour
	defaultCategoriesRefresh = 7 * 24 * time.Hour
)
