package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// scrape GETs url and parses the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return mf
}

// value returns the value of the series of family name whose labels
// include want, and whether it exists.
func value(mf map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := mf[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func newLimiter(t *testing.T) *quota.Limiter {
	t.Helper()
	backend, err := quota.NewSQLite(filepath.Join(t.TempDir(), "quota.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := quota.New(backend,
		[]quota.Bucket{{Name: "units", Limit: 100, Window: time.Hour}, {Name: "search", Limit: 5, Window: time.Hour}},
		quota.Costs{"videos.list": {{Bucket: "units", Units: 1}}, "search.list": {{Bucket: "units", Units: 10}, {Bucket: "search", Units: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	return lim
}

func TestScrapeMatchesLimiterAndRuns(t *testing.T) {
	ctx := context.Background()
	lim := newLimiter(t)
	for _, m := range []string{"videos.list", "videos.list", "videos.list", "search.list"} {
		if d, err := lim.Reserve(ctx, "proj-a", m); err != nil || !d.Allowed {
			t.Fatalf("Reserve %s: %+v %v", m, d, err)
		}
	}
	m := New(lim, []string{"proj-a", "proj-b"}, []string{"US", "GB"}, 0)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m.ObserveRun(store.Run{Credential: "proj-a", Region: "US", StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond),
		Outcome: store.OutcomeSuccess, Units: map[string]int64{"units": 3}})
	m.ObserveRun(store.Run{Credential: "proj-a", Region: "GB", StartedAt: start, FinishedAt: start.Add(time.Second),
		Outcome: store.OutcomeDenied, Units: map[string]int64{"units": 10, "search": 1}, Unmetered: 2})
	for range 3 {
		m.ObserveCall("videos.list", 200, 20*time.Millisecond)
	}
	m.ObserveCall("videos.list", 403, 5*time.Millisecond)
	m.ObserveCall("videos.list", 0, time.Second)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	mf := scrape(t, srv.URL+"/metrics")
	for _, o := range []store.Outcome{store.OutcomeSuccess, store.OutcomeSuccessUnmetered, store.OutcomeDenied, store.OutcomeFailed, store.OutcomeInterrupted} {
		help := mf["trendfetch_runs_total"].GetHelp()
		if words := strings.FieldsFunc(help, func(r rune) bool { return r != '_' && (r < 'a' || r > 'z') }); !slices.Contains(words, string(o)) {
			t.Errorf("trendfetch_runs_total's HELP %q does not name the outcome %s", help, o)
		}
	}

	for _, cred := range []string{"proj-a", "proj-b"} {
		st := lim.Status(ctx, cred)
		if !st.Reachable || len(st.Buckets) != 2 {
			t.Fatalf("Status(%s) = %+v", cred, st)
		}
		if up, _ := value(mf, "trendfetch_quota_backend_up", map[string]string{"credential": cred, "backend": "sqlite"}); up != 1 {
			t.Errorf("%s: backend_up = %v", cred, up)
		}
		for _, b := range st.Buckets {
			l := map[string]string{"credential": cred, "bucket": b.Name}
			for name, want := range map[string]int64{
				"trendfetch_quota_used_units":       b.Used,
				"trendfetch_quota_remaining_units":  b.Remaining,
				"trendfetch_quota_limit_units":      b.Limit,
				"trendfetch_quota_used_today_units": b.UsedToday,
			} {
				if got, ok := value(mf, name, l); !ok || got != float64(want) {
					t.Errorf("%s%v = %v (present %v), Limiter.Status says %d", name, l, got, ok, want)
				}
			}
			if got, _ := value(mf, "trendfetch_quota_window_seconds", l); got != 3600 {
				t.Errorf("window of %v = %v, want 3600", l, got)
			}
		}
	}
	// The figures themselves, so that a Status reading 0 everywhere fails.
	for l, want := range map[[2]string]float64{{"proj-a", "units"}: 13, {"proj-a", "search"}: 1, {"proj-b", "units"}: 0} {
		if got, _ := value(mf, "trendfetch_quota_used_units", map[string]string{"credential": l[0], "bucket": l[1]}); got != want {
			t.Errorf("used %v = %v, want %v", l, got, want)
		}
	}

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"trendfetch_runs_total", map[string]string{"region": "US", "outcome": "success"}, 1},
		{"trendfetch_runs_total", map[string]string{"region": "GB", "outcome": "denied"}, 1},
		{"trendfetch_runs_total", map[string]string{"region": "GB", "outcome": "success"}, 0},
		{"trendfetch_runs_total", map[string]string{"region": "US", "outcome": "interrupted"}, 0},
		{"trendfetch_run_duration_seconds", map[string]string{"region": "US"}, 1},
		{"trendfetch_units_spent_total", map[string]string{"credential": "proj-a", "bucket": "units"}, 13},
		{"trendfetch_units_spent_total", map[string]string{"credential": "proj-a", "bucket": "search"}, 1},
		{"trendfetch_unmetered_calls_total", map[string]string{"credential": "proj-a"}, 2},
		{"trendfetch_api_calls_total", map[string]string{"method": "videos.list", "status": "200"}, 3},
		{"trendfetch_api_calls_total", map[string]string{"method": "videos.list", "status": "403"}, 1},
		{"trendfetch_api_calls_total", map[string]string{"method": "videos.list", "status": "0"}, 1},
		{"trendfetch_api_call_duration_seconds", map[string]string{"method": "videos.list"}, 5},
		{"trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"}, float64(start.Add(1500*time.Millisecond).UnixNano()) / 1e9},
		{"trendfetch_last_success_timestamp_seconds", map[string]string{"region": "GB"}, 0},
	} {
		got, ok := value(mf, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if h := mf["trendfetch_run_duration_seconds"].GetMetric(); len(h) > 0 {
		for _, m := range h {
			if m.GetLabel()[0].GetValue() == "US" && m.Histogram.GetSampleSum() != 1.5 {
				t.Errorf("US run duration sum = %v, want 1.5 s", m.Histogram.GetSampleSum())
			}
		}
	}

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"status":"ok","error":null}`+"\n" {
		t.Errorf("/healthz: %s %q", resp.Status, body)
	}
	if resp, err := http.Get(srv.URL + "/nope"); err != nil || resp.StatusCode != 404 {
		t.Errorf("/nope: %v %v", resp, err)
	}
}

// downReader is a limiter whose backend cannot answer.
type downReader struct{}

func (downReader) Status(_ context.Context, cred string) quota.Status {
	return quota.Status{Credential: cred, Backend: "redis", Reachable: false, Err: errors.New("connection refused")}
}

func TestUnreachableBackendIsReportedNotFatal(t *testing.T) {
	m := New(downReader{}, []string{"proj"}, nil, time.Second)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	mf := scrape(t, srv.URL+"/metrics")
	if up, ok := value(mf, "trendfetch_quota_backend_up", map[string]string{"credential": "proj", "backend": "redis"}); !ok || up != 0 {
		t.Errorf("backend_up = %v (present %v), want 0", up, ok)
	}
	if _, ok := mf["trendfetch_quota_used_units"]; ok {
		t.Error("used units reported for an unreachable backend")
	}
}

// TestTextfileDirectoryMissing (issue 40 item 17): a textfile directory that
// does not exist (or is a file) is named with what to do; the error never
// names the temporary file the write would have used.
func TestTextfileDirectoryMissing(t *testing.T) {
	m := New(nil, nil, nil, time.Second)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, "missing"), file} {
		err := m.WriteTextfile(TextfileName(d, "US"), "US")
		if err == nil || !strings.Contains(err.Error(), "metrics textfile directory "+d+" ") ||
			!strings.Contains(err.Error(), "runs.metrics_textfile") || strings.Contains(err.Error(), ".prom.") {
			t.Errorf("textfile in %s: %v, want the directory named with a hint", d, err)
		}
	}
	if err := m.WriteTextfile(TextfileName(dir, "US"), "US"); err != nil {
		t.Errorf("textfile in an existing directory: %v", err)
	}
}
