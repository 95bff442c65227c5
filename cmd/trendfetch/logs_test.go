package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestJSONLogsArePureJSON: with JSON logs, a denied run, a failed lookup and
// a configuration error each end in one JSON event with the exit code (and
// hint), never a plain "trendfetch: ..." line.
func TestJSONLogsArePureJSON(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	tiny := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 1, window: 1h}\n  costs:\n    videos.list: {units: 1}\n")
	e.run("--config", tiny, "--api-endpoint", url, "run", "--region", "US")
	uk := filepath.Join(e.dir, "uk.yaml")
	if err := os.WriteFile(uk, []byte("regions: [UK]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		hint string
	}{
		{[]string{"--config", tiny, "--api-endpoint", url, "run", "--region", "US"}, 75, ""},
		{[]string{"video", "nope0000000"}, exitcode.NotFound, ""},
		{[]string{"--config", uk, "run", "--all"}, 2, ""},
		{[]string{"chart", "--region", "XX"}, 2, "trendfetch regions"},
	} {
		res := e.run(tc.args...)
		if res.code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, res.code, tc.code, res.rawStderr)
		}
		lines := strings.Split(strings.TrimSpace(res.rawStderr), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Errorf("%v: a line that is not JSON: %q", tc.args, l)
			}
		}
		var last struct {
			Message  string `json:"message"`
			ExitCode int    `json:"exit_code"`
			Hint     string `json:"hint"`
		}
		json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		if last.Message != "trendfetch exits" || last.ExitCode != tc.code || last.Hint != tc.hint {
			t.Errorf("%v: last event %+v, want trendfetch exits with exit_code %d, hint %q", tc.args, last, tc.code, tc.hint)
		}
	}
}

// TestConsoleLogsHonourNO_COLOR: the console log format has colours on a
// terminal unless NO_COLOR is set, and none into a pipe.
func TestConsoleLogsHonourNO_COLOR(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	e.vars["TRENDFETCH_LOG_FORMAT"] = "console"
	onTTY := func() string { // the run's stderr as a terminal shows it
		ptmx, tty := openPTY(t)
		cmd := exec.Command(binary, "--api-endpoint", url, "run", "--region", "US")
		for k, v := range e.vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = tty
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shown := make(chan string)
		go func() {
			b, _ := io.ReadAll(ptmx) // ends with EIO once the terminal end closes
			shown <- string(b)
		}()
		if err := cmd.Wait(); err != nil {
			t.Errorf("run: %v", err)
		}
		tty.Close()
		return <-shown
	}
	if out := onTTY(); !strings.Contains(out, "\x1b[") || !strings.Contains(out, "run finished") {
		t.Fatalf("console logs on a terminal without NO_COLOR: want colours\n%q", out)
	}
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 || strings.Contains(res.stderr, "\x1b[") || !strings.Contains(res.stderr, "run finished") {
		t.Errorf("console logs into a pipe: exit %d, want no escapes\n%q", res.code, res.stderr)
	}
	e.vars["NO_COLOR"] = "1"
	if out := onTTY(); strings.Contains(out, "\x1b[") || !strings.Contains(out, "run finished") {
		t.Errorf("NO_COLOR=1 on a terminal: want console logs without escapes\n%q", out)
	}
}
