package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestQuotaStatusNamesCounterBuckets: `quota status` marks a sliding-window
// counter bucket (its USED is the estimate) with its number of counters,
// and --json says algorithm and slots (null slots for a log) and null
// entries for the counter, which does not count calls.
func TestQuotaStatusNamesCounterBuckets(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 100, window: 1h}\n    - {name: search, limit: 10, window: 1m, algorithm: counter, slots: 61}\n  costs:\n    videos.list: {units: 1}\n    search.list: {search: 1}\n")
	res := e.run("--config", cfg, "quota", "status")
	if res.code != 0 {
		t.Fatalf("quota status: exit %d\n%s", res.code, res.stderr)
	}
	var units, search string
	for _, line := range strings.Split(res.stdout, "\n") {
		switch f := strings.Fields(line); {
		case len(f) > 0 && f[0] == "units":
			units = line
		case len(f) > 0 && f[0] == "search":
			search = line
		}
	}
	if !strings.Contains(search, "1m0s counter(61)") || strings.Contains(units, "counter") {
		t.Fatalf("status table does not mark the counter bucket:\n%s", res.stdout)
	}
	res = e.run("--config", cfg, "quota", "status", "--json")
	var out struct {
		Buckets []struct {
			Name      string `json:"name"`
			Algorithm string `json:"algorithm"`
			Slots     *int   `json:"slots"`
			Entries   *int64 `json:"entries"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || len(out.Buckets) != 2 {
		t.Fatalf("quota status --json: %v\n%s", err, res.stdout)
	}
	for _, b := range out.Buckets {
		if (b.Name == "search") != (b.Algorithm == "counter") || (b.Slots != nil) != (b.Name == "search") ||
			(b.Slots != nil && *b.Slots != 61) || (b.Entries == nil) != (b.Name == "search") {
			t.Errorf("bucket %s: algorithm %q slots %v entries %v", b.Name, b.Algorithm, b.Slots, b.Entries)
		}
	}
}
