package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Use is what the configuration asks of the API in region's runs (any
// region's for ""): the input of callsite.Site's Calls and Enabled.
func (c *Config) Use(region string) callsite.Use {
	u := callsite.Use{Charts: 1 + int64(len(c.Chart.Categories[region])), PageSize: c.API.PageSize,
		StatsTrackFor: c.Stats.TrackFor.Std(), StatsEvery: c.Stats.Every.Std()}
	searches := c.SearchesFor(region)
	if region == "" {
		searches = c.Searches
	}
	for _, s := range searches {
		u.Searches++
		u.SearchPages += int64(max(s.MaxPages, 1))
	}
	if c.Channels.Enabled {
		u.ChannelsRefresh = c.Channels.Refresh.Std()
	}
	if c.Categories.Enabled {
		u.CategoriesRefresh = c.Categories.Refresh.Std()
	}
	u.TextRefreshPerDay = int64(c.Store.Policy.RefreshCalls(c.Store.RefreshPerDay))
	return u
}

// validateCallSites refuses a quota.costs or quota.policies key that is no
// call site (a typo would fail mid-run, after spending units) and a call
// site this config enables without a cost (unless a run skips it).
func (c *Config) validateCallSites() error {
	known := callsite.Names()
	costs, policies := slices.Sorted(maps.Keys(c.Quota.Costs)), slices.Sorted(maps.Keys(c.Quota.Policies))
	for j, keys := range [][]string{costs, policies} {
		for _, m := range keys {
			if _, ok := callsite.Lookup(m); ok {
				continue
			}
			reason := "not a call site trendfetch makes"
			if s := termtext.Closest(m, known); s != "" {
				reason += fmt.Sprintf("; did you mean %s?", s)
			}
			return invalid([]string{"quota.costs.", "quota.policies."}[j]+termtext.Clip(m, 80), "{...}", "%s (call sites: %s)", reason, strings.Join(known, ", "))
		}
	}
	for _, s := range callsite.All() {
		if _, ok := c.Quota.Costs[s.Name]; ok || s.Why == "" || !s.Enabled(c.Use("")) {
			continue
		}
		_, costs, _ := callsite.Preset(c.Quota.Preset)
		for _, b := range slices.Sorted(maps.Keys(costs[s.Name])) {
			if !slices.Contains(c.Quota.Buckets.names(), b) {
				return invalid("quota.buckets", "["+strings.Join(c.Quota.Buckets.names(), ", ")+"]",
					"%s has no cost, but %s: quota.buckets removes bucket %s, which its cost charges; keep the bucket or give quota.costs", s.Name, s.Why, b)
			}
		}
		return invalid("quota.costs", "{"+strings.Join(slices.Sorted(maps.Keys(c.Quota.Costs)), ", ")+"}", "%s has no cost, but %s: add quota.costs.%s", s.Name, s.Why, s.Name)
	}
	return nil
}

// validatePolicies refuses a policy without a cost or of an unknown name.
func (c *Config) validatePolicies() error {
	for m, p := range c.Quota.Policies {
		if _, ok := c.Quota.Costs[m]; !ok {
			return invalid("quota.policies."+m, p, "no cost configured for this method in quota.costs")
		}
		if p != callsite.FailOpen && p != callsite.FailClosed && p != callsite.Reserve {
			return invalid("quota.policies."+m, p, "want fail-open, fail-closed or reserve")
		}
		if p == callsite.Reserve && len(c.Quota.Reserve) == 0 {
			return invalid("quota.policies."+m, p, "no outage reserve to spend: set quota.reserve (units or a percent per bucket)")
		}
	}
	_, err := c.ReserveUnits()
	return err
}
