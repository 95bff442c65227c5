package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestDenialOneWarningSameUnits (issue 31 item 17): a denied run logs one
// warning, and `runs` shows the units the log line gave.
func TestDenialOneWarningSameUnits(t *testing.T) {
	_, url, e := sampleInproc(t, "US")
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
