package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// TestQuotaStatusShowsMarks (issue 32 item 1): a per-day 429 to search.list
// marks that call site (the run succeeds with the chart), a 403
// quotaExceeded to videos.list then marks the credential (exit 75); `quota
// status` shows each mark, what it covers and why, and --json lists them
// under marks (call_site null for the credential, until RFC 3339 UTC at the
// next Pacific midnight).
func TestQuotaStatusShowsMarks(t *testing.T) {
	emu, url, e := sampleEnv(t, "US")
	p1, err := os.ReadFile(filepath.Join(youtubetest.DataDir(t), "api_json", "pyyoutube__search_search_by_keywords_p1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := emu.SetSearchPages(p1); err != nil {
		t.Fatal(err)
	}
	cfg := e.writeConfig("searches:\n  - q: surf\n")
	emu.AnswerNext(callsite.SearchList, 1, youtubetest.PerDay429)
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 || emu.Calls(callsite.SearchList) != 1 {
		t.Fatalf("run after a per-day 429 to search.list: exit %d, %d search.list calls; want 0 and 1\n%s", res.code, emu.Calls(callsite.SearchList), res.stderr)
	}
	emu.AnswerNext(callsite.VideosList, 1, youtubetest.QuotaExceeded)
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US"); res.code != 75 {
		t.Fatalf("run after 403 quotaExceeded: exit %d, want 75\n%s", res.code, res.stderr)
	}

	res := e.run("--config", cfg, "quota", "status")
	for _, want := range []string{"the credential (every call site); the API answered HTTP 403 quotaExceeded",
		"search.list (its own Google quota; the other call sites go on); the API answered HTTP 429 rateLimitExceeded RESOURCE_EXHAUSTED: limit SearchQueriesPerDayPerProject"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("quota status lacks %q:\n%s", want, res.stdout)
		}
	}
	res = e.run("--config", cfg, "quota", "status", "--json")
	var out struct {
		ExhaustedUntil *time.Time `json:"exhausted_until"`
		Marks          []struct {
			CallSite *string `json:"call_site"`
			Until    string  `json:"until"`
			Why      string  `json:"why"`
		} `json:"marks"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || res.code != 0 {
		t.Fatalf("quota status --json: exit %d, %v\n%s", res.code, err, res.stdout)
	}
	if len(out.Marks) != 2 || out.Marks[0].CallSite != nil || out.Marks[1].CallSite == nil || *out.Marks[1].CallSite != callsite.SearchList ||
		!strings.Contains(out.Marks[0].Why, "quotaExceeded") || out.ExhaustedUntil == nil {
		t.Fatalf("marks %s", res.stdout)
	}
	for _, m := range out.Marks {
		until, err := time.Parse(time.RFC3339, m.Until)
		if err != nil || !strings.HasSuffix(m.Until, "Z") || until.Hour() != 7 && until.Hour() != 8 {
			t.Errorf("until %q: want RFC 3339 UTC at a Pacific midnight (07:00 or 08:00Z)", m.Until)
		}
	}
}
