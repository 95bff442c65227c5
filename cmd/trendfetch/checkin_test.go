package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// pingRecorder is a local monitor that records the check-ins it receives
// ("POST /path?rid=... body") and answers status.
func pingRecorder(t *testing.T, status int) (*httptest.Server, func() []string) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" rid="+r.URL.Query().Get("rid")+" "+string(body))
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// TestRunChecksIn: with runs.checkin_url, a run pings /start, then its exit
// status with its summary, under one run id; a quota denial reads /75; a
// monitor that fails costs one warning and changes no exit code; the ping
// key never reaches the output.
func TestRunChecksIn(t *testing.T) {
	srv, got := pingRecorder(t, http.StatusOK)
	emu := youtubetest.New()
	emu.SetChart("US", usChart(t))
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	e.vars["TRENDFETCH_CHECKIN_URL"] = srv.URL + "/pingKEY0123456789/trendfetch-{region}"
	res := e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	output := res.stdout + res.stderr
	pings := got()
	if len(pings) != 2 || !strings.HasPrefix(pings[0], "POST /pingKEY0123456789/trendfetch-us/start rid=") ||
		!strings.HasPrefix(pings[1], "POST /pingKEY0123456789/trendfetch-us/0 rid=") || !strings.Contains(pings[1], "US success: 4 pages, 200 videos") {
		t.Fatalf("pings %q: want /start then /0 with the run's summary", pings)
	}
	rid := strings.Fields(pings[0])[2]
	if len(rid) != len("rid=")+36 || strings.Fields(pings[1])[2] != rid {
		t.Errorf("pings %q: want one run id (a UUID) for both", pings)
	}

	denied := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 2, window: 1h}\n  costs:\n    videos.list: {units: 1}\n")
	res = e.run("--config", denied, "--api-endpoint", url, "run", "--region", "US")
	output += res.stdout + res.stderr
	pings = got()
	if res.code != 75 || len(pings) != 4 || !strings.HasPrefix(pings[3], "POST /pingKEY0123456789/trendfetch-us/75 rid=") || !strings.Contains(pings[3], "quota") {
		t.Errorf("denied run: exit %d, pings %q: want /75 with the denial", res.code, pings)
	}

	failing, _ := pingRecorder(t, http.StatusInternalServerError)
	e.vars["TRENDFETCH_CHECKIN_URL"] = failing.URL + "/pingKEY0123456789"
	res = e.run("--api-endpoint", url, "run", "--region", "US")
	output += res.stdout + res.stderr
	if res.code != 0 || strings.Count(res.stderr, "check-in failed") != 1 {
		t.Errorf("failing monitor: exit %d, want 0 and one warning:\n%s", res.code, res.stderr)
	}
	e.vars["TRENDFETCH_CHECKIN_URL"] = "ftp://monitor/pingKEY0123456789"
	res = e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 2 || !strings.Contains(res.stderr, "runs.checkin_url") {
		t.Errorf("ftp check-in URL: exit %d, want 2 naming runs.checkin_url:\n%s", res.code, res.stderr)
	}
	if output += res.stdout + res.stderr; strings.Contains(output, "pingKEY0123456789") {
		t.Errorf("the ping key reached the output:\n%s", output)
	}
}
