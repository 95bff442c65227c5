package main

import (
	"strings"
	"testing"
)

// TestNewcomerFindings (issue 31 item 17): what a newcomer tripped on, one
// check each.
func TestNewcomerFindings(t *testing.T) {
	_, url, e := sampleInproc(t, "US")
	check := func(name string, res result, code int, want ...string) {
		t.Helper()
		out := res.stdout + res.stderr
		for _, w := range want {
			if res.code != code || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d (want %d), want %q in\n%s", name, res.code, code, w, out)
			}
		}
	}
	check("one call", e.run("quota", "check", "--method", "videos.list"), 0, "1 videos.list call fits now")
	check("--method search", e.run("quota", "check", "--method", "search"), 2, "Try: trendfetch quota check --method search.list")
	res := e.run("crontab", "--every", "90m", "--format", "systemd")
	check("systemd 90m", res, 2, "cannot be written as a systemd OnCalendar= event")
	if strings.Contains(res.stderr, "crontab line") {
		t.Errorf("crontab --format systemd speaks of a crontab line:\n%s", res.stderr)
	}
	check("cron 90m", e.run("crontab", "--every", "90m"), 2, "cannot be written as a crontab line")
	check("help", e.run("--help"), 0, "Parquet")

	// Console logs into a pipe (make demo | less): no colour codes.
	e.vars["TRENDFETCH_LOG_FORMAT"] = "console"
	res = e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || !strings.Contains(res.stderr, "run finished") && !strings.Contains(res.stderr, "INF") {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	if strings.Contains(res.stderr, "\x1b[") {
		t.Errorf("console log into a pipe holds colour codes:\n%q", res.stderr)
	}
	check("chart --run 9999", e.run("chart", "--region", "US", "--run", "9999"), 4, "by run 9999")
}
