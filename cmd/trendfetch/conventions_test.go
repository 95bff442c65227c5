package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHugeValuesAreNotEchoedWhole: a 300 KB database value and a 126 KB
// query are named in one short line, not echoed whole.
func TestHugeValuesAreNotEchoedWhole(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	cfg := e.writeConfig("database: /nonexistent/" + strings.Repeat("d", 300<<10) + "\n")
	for _, args := range [][]string{
		{"--config", cfg, "--api-endpoint", url, "run", "--region", "US"},
		{"--config", cfg, "runs"},
		{"search", strings.Repeat("q", 126<<10)},
		{"search", "\"" + strings.Repeat("q", 126<<10)},
	} {
		res := e.run(args...)
		if out := res.stdout + res.stderr; len(out) > 4<<10 {
			t.Errorf("%.60v...: %d bytes of output (exit %d), want a short message:\n%.300s", args, len(out), res.code, out)
		}
	}
}

// TestLogsAndTablesFollowTheConventions: log lines carry durations as *_ms
// and no zero times, times in human output name their zone (UTC), the runs
// table shows a short reason (the full one is in --json), and failures of
// several regions print one line each.
func TestLogsAndTablesFollowTheConventions(t *testing.T) {
	long := "http://127.0.0.1/" + strings.Repeat("very/long/path/", 30)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"bad request %s and %s","errors":[{"reason":"badRequest","message":"m"}]}}`, long, long)
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	e.vars["TRENDFETCH_LOG_LEVEL"] = "trace"
	e.vars["TZ"] = "America/New_York" // local time must not leak into output
	res := e.run("--api-endpoint", srv.URL+"/", "run", "--region", "US,GB")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
	}
	var last []string
	for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		if strings.HasPrefix(line, "{") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Errorf("log line is not JSON: %s", line)
				continue
			}
			if ts, _ := ev["time"].(string); !strings.HasSuffix(ts, "Z") {
				t.Errorf("log time %q is not UTC", ts)
			}
			continue
		}
		last = append(last, line)
	}
	if strings.Contains(res.stderr, "0001-01-01") {
		t.Errorf("a zero time in the logs:\n%s", res.stderr)
	}
	if len(last) != 2 || !strings.Contains(last[0], " US") || !strings.Contains(last[1], " GB") {
		t.Errorf("want one final line per failed region, got %q", last)
	}
	table := e.run("runs")
	if !strings.Contains(table.stdout, "STARTED (UTC)") {
		t.Errorf("runs table does not name its zone:\n%s", table.stdout)
	}
	for _, line := range strings.Split(table.stdout, "\n") {
		if len(line) > 200 {
			t.Errorf("runs table line of %d characters: the reason is not shortened:\n%s", len(line), line)
		}
	}
	js := e.run("runs", "--json")
	if !strings.Contains(js.stdout, strings.Repeat("very/long/path/", 30)) {
		t.Errorf("runs --json lost the full reason:\n%.500s", js.stdout)
	}
}
