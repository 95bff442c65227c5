package engine

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// newTestEngine returns an engine over real SQLite files in a temporary
// directory and the youtubetest emulator serving the sample chart of
// regions, with its log.
func newTestEngine(t *testing.T, policy store.Policy, regions ...string) (*Engine, *youtubetest.Server, *bytes.Buffer) {
	t.Helper()
	emu := youtubetest.New()
	for _, r := range regions {
		emu.SetChart(r, youtubetest.Sample())
	}
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Database = filepath.Join(dir, "trendfetch.db")
	cfg.Quota.SQLite.Path = filepath.Join(dir, "quota.db")
	cfg.API.Endpoint = emu.StartTest(t) + "/"
	cfg.Regions = regions
	cfg.Store.Policy = policy
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	e := New(Options{
		Config:    cfg,
		Log:       zerolog.New(logs),
		LookupEnv: func(k string) (string, bool) { return "engine-test-key", k == "YOUTUBE_API_KEY" },
		Version:   "test",
	})
	return e, emu, logs
}

// TestRunPolicyExport runs the use cases in-process, as the commands call
// them: a run of two regions (check-ins, metrics textfile, run records, units
// spent at the emulator), the storage policy judged 31 days later (dry run,
// then applied), and exports to a file before and after.
func TestRunPolicyExport(t *testing.T) {
	ctx := context.Background()
	e, emu, logs := newTestEngine(t, store.PolicyYouTube, "US", "GB")
	textfiles := t.TempDir()
	e.cfg.Runs.MetricsTextfile = textfiles
	var (
		mu    sync.Mutex
		pings []string // the check-ins received, in order
	)
	monitor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		pings = append(pings, r.URL.Path)
	}))
	defer monitor.Close()
	e.cfg.Runs.CheckinURL = monitor.URL + "/" + checkin.RegionPlaceholder

	r, err := e.OpenRunner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RunRegions(ctx, []string{"US", "GB"}); err != nil {
		t.Fatalf("RunRegions: %v\n%s", err, logs)
	}
	runs, err := r.store.RunsPage(ctx, store.RunsQuery{Region: "GB"})
	if err != nil || len(runs) != 1 || runs[0].Outcome != store.OutcomeSuccess || runs[0].Videos != youtubetest.SampleSize {
		t.Fatalf("GB's runs: %+v, %v", runs, err)
	}
	mu.Lock()
	if got, want := strings.Join(pings, ","), "/us/start,/us/0,/gb/start,/gb/0"; got != want {
		t.Errorf("check-ins: %s, want %s", got, want)
	}
	mu.Unlock()
	if u := emu.Units("engine-test-key"); u != 4 { // two pages a region
		t.Errorf("%d units spent at the emulator, want 4", u)
	}
	for _, region := range []string{"US", "GB"} {
		if _, err := os.Stat(filepath.Join(textfiles, "trendfetch_"+region+".prom")); err != nil {
			t.Errorf("metrics textfile of %s: %v", region, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "us.csv")
	export := func() [][]string {
		t.Helper()
		st, err := e.OpenStore(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		x := Export{Query: store.ExportQuery{Regions: []string{"US"}}, File: out,
			Format: store.ExportFormat{Format: "csv", Layout: store.LayoutYoutubeNew}}
		if err := e.Export(ctx, st, x); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if rows := export(); len(rows) != 1+youtubetest.SampleSize || rows[0][0] != "video_id" {
		t.Fatalf("export: %d rows, header %v; want a header and %d rows", len(rows), rows[0], youtubetest.SampleSize)
	}

	later := time.Now().AddDate(0, 0, 31)
	dry, err := e.Prune(ctx, PruneRequest{AsOf: later, DryRun: true})
	if err != nil || dry.Policy != store.PolicyYouTube || dry.Report.Captures != 2 || dry.Report.Entries != 2*youtubetest.SampleSize {
		t.Fatalf("dry run 31 days later: %+v, %v; want policy youtube, 2 captures", dry, err)
	}
	if rows := export(); len(rows) != 1+youtubetest.SampleSize {
		t.Fatalf("the dry run removed rows: %d left", len(rows)-1)
	}
	if kept, err := e.Prune(ctx, PruneRequest{AsOf: later, Policy: store.PolicyKeep}); err != nil || kept.Report != (store.PruneReport{}) {
		t.Fatalf("keep: %+v, %v; want nothing removed", kept, err)
	}
	res, err := e.Prune(ctx, PruneRequest{AsOf: later})
	if err != nil || res.Report != dry.Report {
		t.Fatalf("prune 31 days later: %+v, %v; want the dry run's report %+v", res.Report, err, dry.Report)
	}
	if rows := export(); len(rows) != 1 {
		t.Errorf("export after the policy: %d rows, want the header only", len(rows))
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestPolicyInForce: an unset store.policy follows youtube on a new
// database, the runs' text step is on under amended only, and the engine
// tells what it opened.
func TestPolicyInForce(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		configured, want store.Policy
		textStep         bool
	}{{"", store.PolicyYouTube, false}, {store.PolicyAmended, store.PolicyAmended, true}, {store.PolicyKeep, store.PolicyKeep, false}} {
		e, _, _ := newTestEngine(t, c.configured, "US")
		r, err := e.OpenRunner(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, legacy, err := store.InForce(ctx, c.configured, r.store)
		if err != nil || p != c.want || legacy {
			t.Errorf("policy %q: in force %q (legacy %v, %v), want %q", c.configured, p, legacy, err, c.want)
		}
		if on := r.fetch.Settings.TextCutoff != nil; on != c.textStep {
			t.Errorf("policy %q: text step %v, want %v", c.configured, on, c.textStep)
		}
		if e.PolicyNote(ctx, r.store) != "" {
			t.Errorf("policy %q: a new database gets the unset-policy note", c.configured)
		}
		r.Close()
	}
}
