package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Truncate shortens a value echoed in a message to at most n bytes (on a
// rune boundary), marking the cut with "…(N bytes)": a 50 MB setting or a
// 100 KB query must not flood stderr. Control characters and invalid UTF-8
// are escaped Go-style (a key "a\nb" prints as a\nb), so the message stays
// one line whatever the input.
func Truncate(s string, n int) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// validateCallSites checks quota.costs and quota.policies against the
// call-site table (package callsite): every key must be a known call site
// (a typo such as search.lst would otherwise be accepted and the real call
// site would fail mid-run, after spending units), and every call site this
// config enables must have a cost.
func (c *Config) validateCallSites() error {
	known := callsite.Names()
	for _, section := range []struct {
		name string
		keys []string
	}{{"quota.costs", sortedKeys(c.Quota.Costs)}, {"quota.policies", sortedKeys(c.Quota.Policies)}} {
		for _, m := range section.keys {
			if _, ok := callsite.Lookup(m); ok {
				continue
			}
			reason := "not a call site trendfetch makes"
			if s := termtext.Closest(m, known); s != "" {
				reason += fmt.Sprintf("; did you mean %s?", s)
			}
			return invalid(section.name+"."+Truncate(m, 80), "{...}", "%s (call sites: %s)", reason, strings.Join(known, ", "))
		}
	}
	need := []struct {
		site, why string
		on        bool
	}{
		{callsite.VideosList, "every run fetches the chart", true},
		{callsite.CategoriesList, "categories.enabled is true", c.Categories.Enabled},
		{callsite.ChannelsList, "channels.enabled is true", c.Channels.Enabled},
		{callsite.VideosListRefresh, "store.policy is amended (set store.refresh_per_day: 0 to remove old text without refreshing it)",
			c.Store.Policy == PolicyAmended && c.Store.RefreshPerDay > 0},
	}
	for _, n := range need {
		if _, ok := c.Quota.Costs[n.site]; n.on && !ok {
			return c.noCost(n.site, n.why)
		}
	}
	return nil
}
