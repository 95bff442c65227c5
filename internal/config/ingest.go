package config

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/trendfetch/trendfetch/internal/regions"
)

// Chart is the `chart` section: per region code, the videoCategoryIds fetched as narrowed charts.
type Chart struct {
	Categories map[string][]string `yaml:"categories"`
}

// Search is one entry of `searches`, a search.list query for Regions (empty = all): q, order
// (default relevance), published within PublishedAfter (0 = any), at most MaxPages of 50 (1-10).
type Search struct {
	Regions        []string `yaml:"regions"`
	Q              string   `yaml:"q"`
	Order          string   `yaml:"order"`
	PublishedAfter Duration `yaml:"published_after"`
	MaxPages       int      `yaml:"max_pages"`
}

// Refresh is `channels` or `categories`: whether it is on, and the age stored data is refetched at.
type Refresh struct {
	Enabled bool     `yaml:"enabled"`
	Refresh Duration `yaml:"refresh"`
}

// validate checks the chart section: region codes and videoCategoryIds.
func (ch Chart) validate() error {
	for region, cats := range ch.Categories {
		if _, err := regions.Parse(region); err != nil {
			return fmt.Errorf("config: chart.categories: %w", err)
		}
		for _, id := range cats {
			if id == "" || len(id) > 4 {
				return invalid("chart.categories."+region, id, "want a videoCategoryId such as 10")
			}
		}
	}
	return nil
}

// validateSearches checks each entry of searches.
func (c *Config) validateSearches() error {
	for i, s := range c.Searches {
		if err := s.validate(fmt.Sprintf("searches[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one search, f its key (searches[N]).
func (s Search) validate(f string) error {
	if s.Q == "" {
		return invalid(f+".q", `""`, "a search needs query text")
	}
	if err := oneOf(f+".order", cmp.Or(s.Order, "relevance"), "date", "rating", "relevance", "title", "videoCount", "viewCount"); err != nil {
		return err
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
	return nil
}

// validateRefresh checks the channels and categories sections.
func (c *Config) validateRefresh() error {
	for name, r := range map[string]Refresh{"channels": c.Channels, "categories": c.Categories} {
		if r.Enabled && r.Refresh <= 0 {
			return invalid(name+".refresh", r.Refresh.Std(), "must be > 0")
		}
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

// validate checks the stats section.
func (s Stats) validate() error {
	if s.TrackFor < 0 {
		return invalid("stats.track_for", s.TrackFor.Std(), "must be 0 (off) or positive, e.g. 168h")
	}
	if s.Every < 0 {
		return invalid("stats.every", s.Every.Std(), "must be 0 (every run) or positive, e.g. 6h")
	}
	return nil
}

// Stats is the `stats` section: videos charted within TrackFor (0 = off) but not now are sampled
// with videos.batchGetStats at most once per Every.
type Stats struct {
	TrackFor Duration `yaml:"track_for"`
	Every    Duration `yaml:"every"`
}
