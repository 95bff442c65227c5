package checkin

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/store"
)

// ping is one request a monitor received.
type ping struct{ method, path, rid, body string }

// monitor is a local HTTP server that records pings and answers status.
func monitor(t *testing.T, status int, delay time.Duration) (*httptest.Server, func() []ping) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []ping
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, ping{r.Method, r.URL.Path, r.URL.Query().Get("rid"), string(body)})
		mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []ping { mu.Lock(); defer mu.Unlock(); return append([]ping(nil), got...) }
}

func TestPingsStartThenExitStatusWithRunID(t *testing.T) {
	srv, got := monitor(t, http.StatusOK, 0)
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	us := Begin(srv.URL+"/ping-key-123/trendfetch-{region}", "US", log)
	gb := Begin(srv.URL+"/ping-key-123/trendfetch-{region}", "GB", log) // overlapping runs
	gb.End(75, "GB: quota denied (units), 0 pages")
	us.End(0, "US: success, 4 pages, 200 videos, 4 units")
	var nilRun *Run
	nilRun.End(1, "no URL: nothing sent")

	pings := got()
	if len(pings) != 4 {
		t.Fatalf("pings %+v, want 4", pings)
	}
	byRID := map[string][]ping{}
	for _, p := range pings {
		if p.method != http.MethodPost || len(p.rid) != 36 {
			t.Errorf("ping %+v: want a POST with a UUID rid", p)
		}
		byRID[p.rid] = append(byRID[p.rid], p)
	}
	if len(byRID) != 2 {
		t.Fatalf("run ids %v: overlapping runs must differ", byRID)
	}
	for _, ps := range byRID {
		region := strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(ps[0].path, "/start"), "/0"), "/75"), "/ping-key-123/trendfetch-")
		want := map[string][2]string{"us": {"/0", "US: success, 4 pages, 200 videos, 4 units"}, "gb": {"/75", "GB: quota denied (units), 0 pages"}}[region]
		base := "/ping-key-123/trendfetch-" + region
		if len(ps) != 2 || ps[0].path != base+"/start" || ps[1].path != base+want[0] || ps[1].body != want[1] {
			t.Errorf("run %s: pings %+v, want /start then %s with its summary", region, ps, want[0])
		}
	}
	if logs.Len() != 0 {
		t.Errorf("logged %s", logs.String())
	}
}

// TestAFailingMonitorLogsOnceAndNeverHoldsTheRun: a monitor that answers
// 500 costs one warning per run that names its host, never the ping key; a
// monitor that never answers holds End no longer than Timeout.
func TestAFailingMonitorLogsOnceAndNeverHoldsTheRun(t *testing.T) {
	srv, _ := monitor(t, http.StatusInternalServerError, 0)
	var logs bytes.Buffer
	Begin(srv.URL+"/ping-key-123", "US", zerolog.New(&logs)).End(1, "US: error")
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "HTTP 500") || strings.Contains(logs.String(), "ping-key-123") {
		t.Errorf("%d lines, want one warning without the key:\n%s", n, logs.String())
	}

	slow, got := monitor(t, http.StatusOK, time.Minute)
	logs.Reset()
	start := time.Now()
	r := Begin(slow.URL+"/ping-key-123", "US", zerolog.New(&logs))
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Begin took %s: the start ping must not hold the run", d)
	}
	r.End(0, "US: success")
	if d := time.Since(start); d > Timeout+time.Second {
		t.Errorf("End returned after %s, want at most Timeout (%s)", d, Timeout)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || len(got()) == 0 {
		t.Errorf("%d warnings, %d pings received, want one warning:\n%s", n, len(got()), logs.String())
	}
}

func TestSecretsMaskTheKeyNotTheSlug(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hc-ping.com/0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e":     "hc-ping.com/0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e 0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e",
		"https://hc-ping.com/fxQ1pingKEY2xyz/trendfetch-{region}":      "hc-ping.com/fxQ1pingKEY2xyz fxQ1pingKEY2xyz",
		"https://user:s3cretpw@hc.example.org/ping/abcdef123/us-run":   "s3cretpw hc.example.org/ping/abcdef123 ping abcdef123",
		"https://hc.example/ping/0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e": "hc.example/ping/0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e ping 0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e",
	} {
		if got := strings.Join(Secrets(raw), " "); got != want {
			t.Errorf("Secrets(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestSummaryIsOneLine(t *testing.T) {
	run := store.Run{ID: 7, Outcome: store.OutcomeDenied, Pages: 2, Videos: 100, Units: map[string]int64{"units": 2, "search": 0},
		Reason: "quota denied videos.list\nby bucket \"units\""}
	if got, want := Summary("US", run, errors.New("ignored: the run's reason is stored")), `US denied: 2 pages, 100 videos, search 0, units 2; quota denied videos.list by bucket "units"`; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got, want := Summary("GB", store.Run{}, errors.New("region GB is held by host-b")), "GB not run; region GB is held by host-b"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

// TestDenialSummaryHasTheRetryTime (issue 40 item 21): a denial's check-in
// body says when the next attempt can succeed, as the run record does.
func TestDenialSummaryHasTheRetryTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	run := store.Run{ID: 7, Outcome: store.OutcomeDenied, Pages: 1, Units: map[string]int64{"units": 1},
		Reason: "the project's daily quota is spent", RetryAfter: 90*time.Minute + 300*time.Millisecond, RetryAt: at}
	want := "US denied: 1 pages, 0 videos, units 1; the project's daily quota is spent; retry at 2026-12-02T08:00:00Z (in 1h30m1s)"
	if got := Summary("US", run, nil); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}
