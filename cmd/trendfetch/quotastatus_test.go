package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// quotaStatus runs `quota status` in-process (--json: asJSON); its error is
// the command's.
func (p *inproc) quotaStatus(asJSON bool) error {
	p.reset()
	return quotaStatusRun(context.Background(), &quotaStatusOptions{io: p.a.ioStreams, engine: p.engine(),
		credential: p.a.cfg.Credential, preset: p.a.cfg.Quota.Preset, asJSON: asJSON})
}

// TestQuotaStatusNamesThePreset: quota status says which preset the buckets
// come from, for people and in --json.
func TestQuotaStatusNamesThePreset(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	p := newInproc(t, "quota:\n  preset: google-2026\n", map[string]string{"YOUTUBE_API_KEY": "k"})
	p.capture(emu.StartTest(t), "US")
	var st quota.StatusView
	if err := p.quotaStatus(true); err != nil || json.Unmarshal(p.out.Bytes(), &st) != nil {
		t.Fatalf("quota status --json: %v\n%s", err, p.out.String())
	}
	if st.Preset != "google-2026" || len(st.Buckets) != 3 || st.Buckets[0].Limit != 10_000 || !st.Buckets[0].Calendar || st.Buckets[0].Used != 2 {
		t.Errorf("status: %+v", st)
	}
	if err := p.quotaStatus(false); err != nil || !strings.Contains(p.out.String(), "preset google-2026") {
		t.Errorf("human status (%v) does not name the preset:\n%s", err, p.out.String())
	}
}

// TestQuotaStatusShowsMarks (issue 32 item 1): a per-day 429 to search.list
// marks that call site (the run succeeds with the chart), a 403
// quotaExceeded to videos.list then marks the credential (exit 75); `quota
// status` shows each mark, what it covers and why, and --json lists them
// under marks (call_site null for the credential, until RFC 3339 UTC at the
// next Pacific midnight).
func TestQuotaStatusShowsMarks(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	p1, err := os.ReadFile(filepath.Join(youtubetest.DataDir(t), "api_json", "pyyoutube__search_search_by_keywords_p1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := emu.SetSearchPages(p1); err != nil {
		t.Fatal(err)
	}
	p := newInproc(t, "searches:\n  - q: surf\n", map[string]string{"YOUTUBE_API_KEY": "k"})
	emu.AnswerNext(callsite.SearchList, 1, youtubetest.PerDay429)
	if p.capture(emu.StartTest(t), "US"); emu.Calls(callsite.SearchList) != 1 {
		t.Fatalf("run after a per-day 429 to search.list: %d search.list calls; want 1", emu.Calls(callsite.SearchList))
	}
	emu.AnswerNext(callsite.VideosList, 1, youtubetest.QuotaExceeded)
	if err := p.engine().Run(context.Background(), []string{"US"}, false); exit(err) != exitcode.TempFail {
		t.Fatalf("run after 403 quotaExceeded: %v, want exit 75", err)
	}
	err = p.quotaStatus(false)
	for _, want := range []string{"the credential (every call site); the API answered HTTP 403 quotaExceeded",
		"search.list (its own Google quota; the other call sites go on); the API answered HTTP 429 rateLimitExceeded RESOURCE_EXHAUSTED: limit SearchQueriesPerDayPerProject"} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("quota status (%v) lacks %q:\n%s", err, want, p.out.String())
		}
	}
	var out struct {
		ExhaustedUntil *time.Time `json:"exhausted_until"`
		Marks          []struct {
			CallSite *string `json:"call_site"`
			Until    string  `json:"until"`
			Why      string  `json:"why"`
		} `json:"marks"`
	}
	if err := p.quotaStatus(true); json.Unmarshal(p.out.Bytes(), &out) != nil {
		t.Fatalf("quota status --json: %v\n%s", err, p.out.String())
	}
	if len(out.Marks) != 2 || out.Marks[0].CallSite != nil || out.Marks[1].CallSite == nil || *out.Marks[1].CallSite != callsite.SearchList ||
		!strings.Contains(out.Marks[0].Why, "quotaExceeded") || out.ExhaustedUntil == nil {
		t.Fatalf("marks %s", p.out.String())
	}
	for _, m := range out.Marks {
		until, err := time.Parse(time.RFC3339, m.Until)
		if err != nil || !strings.HasSuffix(m.Until, "Z") || until.Hour() != 7 && until.Hour() != 8 {
			t.Errorf("until %q: want RFC 3339 UTC at a Pacific midnight (07:00 or 08:00Z)", m.Until)
		}
	}
}

// TestQuotaStatusEscapesUpstreamText (issue 40 item 4): an upstream answer's
// text kept in a mark (ESC, BEL, a title-change sequence) reaches `quota
// status` made safe for a terminal, as `runs` shows a reason.
func TestQuotaStatusEscapesUpstreamText(t *testing.T) {
	p := newInproc(t, "", nil)
	ctx := context.Background()
	l, err := p.engine().OpenLimiter(false)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "quotaExceeded \x1b]0;pwned\x07 \x1b[2J done"
	if err := l.MarkExhausted(ctx, p.a.cfg.Credential, quota.Mark{Until: time.Now().Add(time.Hour), Why: hostile}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	err = p.quotaStatus(false)
	out := p.out.String()
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "quotaExceeded") || !strings.Contains(out, "done") {
		t.Errorf("quota status (%v) shows the upstream text raw or not at all: %q", err, out)
	}
}

// TestQuotaStatusShowsHeldReserves (issue 41 item 1): a run with an outage reserve takes its hold,
// and `quota status` names the bucket, the host holding it (host name and process tag) and the
// units, counted out of LEFT.
func TestQuotaStatusShowsHeldReserves(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	p := newInproc(t, "quota:\n  reserve: {units: 40}\n  policies: {videos.list: reserve}\n", map[string]string{"YOUTUBE_API_KEY": "k"})
	p.capture(emu.StartTest(t), "US")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	err = p.quotaStatus(false)
	held := regexp.MustCompile(`outage reserves held in units \(counted out of LEFT\): ` + regexp.QuoteMeta(host) + `#\w+ 40\n`)
	left := regexp.MustCompile(`units +\S+ +2/9500 +9458 `) // 9,500 - 2 used - 40 held
	if !held.MatchString(p.out.String()) || !left.MatchString(p.out.String()) {
		t.Errorf("quota status (%v) lacks the hold or LEFT without it:\n%s", err, p.out.String())
	}
}
