package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// TestConfiguredSearchIsStored: against the emulator with its recorded
// search pages, a configured search spends its units and stores its hits:
// `chart --kind search` shows them (before, the run spent 101 units and
// stored nothing).
func TestConfiguredSearchIsStored(t *testing.T) {
	emu, url, e := sampleInproc(t, "US")
	p1, err := os.ReadFile(filepath.Join(youtubetest.DataDir(t), "api_json", "pyyoutube__search_search_by_keywords_p1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := emu.SetSearchPages(p1); err != nil {
		t.Fatal(err)
	}
	cfg := e.writeConfig("searches:\n  - q: surf\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	var c chartOut
	res := e.run("--config", cfg, "chart", "--region", "US", "--kind", "search", "--query", "surf", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &c); err != nil || res.code != 0 || !c.Capture.Complete || len(c.Entries) != 25 {
		t.Fatalf("search capture: exit %d %v, %d entries\n%s", res.code, err, len(c.Entries), res.stderr)
	}
	if c.Entries[0].VideoID != "gQ_1zX-F_No" || c.Entries[0].Title == "" {
		t.Errorf("first hit %+v", c.Entries[0])
	}
}
