package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/trendfetch/trendfetch/internal/store"
)

// readTextfile parses a metrics textfile.
func readTextfile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return mf
}

// TestRunWritesAMetricsTextfile: `run --metrics-textfile DIR` (and
// runs.metrics_textfile) leaves one file per region in DIR, mode 0644 and no
// temp file, with scheduler mode's names, counters carried across runs,
// build info, the last success and the renamed exhaustion gauge; each file
// holds its region's series only, and Debian's node_exporter reads the
// directory without an error and serves each region's values.
func TestRunWritesAMetricsTextfile(t *testing.T) {
	_, url, e := sampleInproc(t, "US", "GB")
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		if res := e.run("--api-endpoint", url, "run", "--region", "US", "--metrics-textfile", dir); res.code != 0 {
			t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
		}
	}
	cfg := e.writeConfig("regions: [GB]\nruns:\n  metrics_textfile: " + dir + "\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--all"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, de := range entries {
		names = append(names, de.Name())
		if fi, _ := de.Info(); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 (node_exporter reads it)", de.Name(), fi.Mode().Perm())
		}
	}
	if strings.Join(names, " ") != "trendfetch_GB.prom trendfetch_US.prom" {
		t.Fatalf("files %v, want one .prom file per region and no temp file", names)
	}
	var runs []store.Run // US's, newest first
	for _, r := range storedRuns(t, e.dbPath()) {
		if r.Region == "US" {
			runs = append(runs, r)
		}
	}
	us := readTextfile(t, filepath.Join(dir, "trendfetch_US.prom"))
	if v := metricValue(us, "trendfetch_runs_total", map[string]string{"region": "US", "outcome": "success"}); v != 2 {
		t.Errorf("runs_total{US,success} = %v, want 2 (carried over from the first run's file)", v)
	}
	spent := runs[0].Units["units"] + runs[1].Units["units"]
	if v := metricValue(us, "trendfetch_units_spent_total", map[string]string{"region": "US", "credential": "default", "bucket": "units"}); v != float64(spent) {
		t.Errorf("units_spent_total = %v, want %d", v, spent)
	}
	if v := metricValue(us, "trendfetch_unmetered_calls_total", map[string]string{"region": "US", "credential": "default"}); v != 0 {
		t.Errorf("unmetered_calls_total = %v, want a series at 0", v)
	}
	if v := metricValue(us, "trendfetch_build_info", map[string]string{"region": "US", "version": "dev", "goversion": runtime.Version()}); v != 1 {
		t.Errorf("build_info = %v, want 1 with version and goversion", v)
	}
	if v := metricValue(us, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"}); v < float64(runs[0].StartedAt.Unix()) {
		t.Errorf("last success %v, want the last run's time", v)
	}
	if us["trendfetch_quota_exhausted_until_timestamp_seconds"] == nil || us["trendfetch_quota_exhausted_until_seconds"] != nil {
		t.Errorf("want trendfetch_quota_exhausted_until_timestamp_seconds (renamed)")
	}
	gb := readTextfile(t, filepath.Join(dir, "trendfetch_GB.prom"))
	if v := metricValue(gb, "trendfetch_runs_total", map[string]string{"region": "GB", "outcome": "success"}); v != 1 {
		t.Errorf("GB runs_total = %v, want 1", v)
	}

	// Each file holds its region's series only: node_exporter refuses a
	// series found in two files (issue 31 item 13).
	for region, mf := range map[string]map[string]*dto.MetricFamily{"US": us, "GB": gb} {
		for name, f := range mf {
			for _, m := range f.GetMetric() {
				if got := labelValue(m, "region"); got != region {
					t.Errorf("trendfetch_%s.prom: %s%v has region %q", region, name, m.GetLabel(), got)
				}
			}
		}
	}
	var gbRun store.Run
	for _, r := range storedRuns(t, e.dbPath()) {
		if r.Region == "GB" {
			gbRun = r
		}
	}
	scraped := nodeExporterScrape(t, dir)
	for _, c := range []struct {
		region string
		runs   float64
		last   time.Time
	}{{"US", 2, runs[0].FinishedAt}, {"GB", 1, gbRun.FinishedAt}} {
		if v := metricValue(scraped, "trendfetch_runs_total", map[string]string{"region": c.region, "outcome": "success"}); v != c.runs {
			t.Errorf("node_exporter: runs_total{%s,success} = %v, want %v", c.region, v, c.runs)
		}
		if v := metricValue(scraped, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": c.region}); math.Abs(v-float64(c.last.UnixNano())/1e9) > 0.001 {
			t.Errorf("node_exporter: last_success{%s} = %v, want %v (its last run's end)", c.region, v, float64(c.last.UnixNano())/1e9)
		}
	}
}

// labelValue returns the value of m's label name ("" when it has none).
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestServeMetricsReadTheLastSuccessFromTheDatabase: serve's /metrics shows
// each region's last success from the database and the build info.
func TestServeMetricsReadTheLastSuccessFromTheDatabase(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	runs := storedRuns(t, e.dbPath())
	d := e.start("serve", "--addr", "127.0.0.1:0")
	mf := scrapeMetrics(t, d.serveAddr())
	got := metricValue(mf, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"})
	if want := float64(runs[0].FinishedAt.UnixNano()) / 1e9; math.Abs(got-want) > 0.001 {
		t.Errorf("serve: last success = %f, want the stored run's %f", got, want)
	}
	if v := metricValue(mf, "trendfetch_build_info", map[string]string{"version": "dev", "goversion": runtime.Version()}); v != 1 {
		t.Errorf("serve: build_info = %v, want 1", v)
	}
	d.stop(syscall.SIGTERM)
}
