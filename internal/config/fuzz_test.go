package config

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse: no YAML input makes Parse or Validate panic, and every
// rejection is one line.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"database: /tmp/x.db\nregions: [us, gb]\n",
		"quota:\n  buckets:\n    - {name: units, limit: 2, window: 10s}\n  costs:\n    videos.list: {units: 1}\n",
		"quota:\n  buckets:\n    - {name: d, limit: 9500, calendar: true}\n  costs:\n    search.list: {d: 100}\n",
		"searches:\n  - {q: x, order: date, published_after: 48h, max_pages: 3}\n",
		"api: {timeout: -1s, page_size: 0}\n",
		"credentials:\n  - name: a\n  - name: a\n",
		"{[",
		"regions: UK",
		"\"a\\nb\": 1\n", // a key holding a newline: the message must still be one line
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := parse(strings.NewReader(in))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line validation error: %q", err)
			}
			return
		}
		if _, _, err := c.Limits(); err != nil {
			t.Fatalf("Validate passed but Limits failed: %v", err)
		}
	})
}

// FuzzCostTable: any bucket limit and cost either validates into a cost
// table whose every charge fits its bucket, or is refused with a one-line
// error naming the field.
func FuzzCostTable(f *testing.F) {
	f.Add(int64(9500), int64(100), int64(95), int64(1), "24h")
	f.Add(int64(50), int64(100), int64(1), int64(1), "1s")
	f.Add(int64(-1), int64(0), int64(0), int64(-5), "0s")
	f.Add(int64(1<<62), int64(1<<62), int64(1), int64(1), "1ns")
	f.Fuzz(func(t *testing.T, unitsLimit, searchCost, searchLimit, videosCost int64, window string) {
		c := Default()
		c.Quota.Buckets[0].Limit = unitsLimit
		c.Quota.Buckets[1].Limit = searchLimit
		c.Quota.Costs["search.list"]["units"] = searchCost
		c.Quota.Costs["videos.list"]["units"] = videosCost
		var d Duration
		if err := d.UnmarshalYAML(yamlScalar(window)); err == nil {
			c.Quota.Buckets[0].Window = d
		}
		buckets, costs, err := c.Limits()
		if err != nil {
			if _, ok := err.(*ValidationError); !ok || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want a one-line *ValidationError, got %T %q", err, err)
			}
			return
		}
		limits := map[string]int64{}
		for _, b := range buckets {
			limits[b.Name] = b.Limit
		}
		for m, cs := range costs {
			for _, ch := range cs {
				if ch.Units <= 0 || ch.Units > limits[ch.Bucket] {
					t.Fatalf("%s charges %d in %s (limit %d)", m, ch.Units, ch.Bucket, limits[ch.Bucket])
				}
			}
		}
	})
}

func yamlScalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }
