package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestNewcomerFindings (issue 31 item 17): what a newcomer tripped on, one
// check each.
func TestNewcomerFindings(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
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

// TestDenialOneWarningSameUnits (issue 31 item 17): a denied run logs one
// warning, and `runs` shows the units the log line gave.
func TestDenialOneWarningSameUnits(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	cfg := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 4, window: 1h}\n  costs:\n    videos.list: {units: 4}\n")
	res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 75 {
		t.Fatalf("exit %d, want 75\n%s", res.code, res.stderr)
	}
	var warnings []string
	units := ""
	for _, line := range strings.Split(strings.TrimSpace(res.rawStderr), "\n") {
		var ev struct {
			Level, Message string
			Units          map[string]int64
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if ev.Level == "warn" {
			warnings = append(warnings, line)
		}
		if ev.Message == "run finished" {
			units = fmt.Sprintf("units=%d", ev.Units["units"])
		}
	}
	if len(warnings) != 1 || units != "units=4" {
		t.Errorf("a denial logged %d warnings (want 1), run finished with %s (want units=4):\n%s", len(warnings), units, res.rawStderr)
	}
	if res := e.run("--config", cfg, "runs"); res.code != 0 || !strings.Contains(res.stdout, " "+units+" ") {
		t.Errorf("runs does not show %s:\n%s%s", units, res.stdout, res.stderr)
	}
}
