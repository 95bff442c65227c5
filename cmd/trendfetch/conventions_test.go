package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestHugeValuesAreNotEchoedWhole: a 300 KB database value and a 126 KB
// query are named in one short line, not echoed whole.
func TestHugeValuesAreNotEchoedWhole(t *testing.T) {
	_, url, e := sampleInproc(t, "US")
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

// TestHintsNameCommandsThatExist: every "Try: trendfetch ..." hint in the
// sources names a real command whose flags and arguments parse (a hint
// built from a value gets a placeholder for it).
func TestHintsNameCommandsThatExist(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	hintRE := regexp.MustCompile(`(?:usagef\(|hint:\s*|hint :?= )"(trendfetch [^"]*)"`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range hintRE.FindAllStringSubmatch(string(src), -1) {
			n++
			hint := strings.ReplaceAll(m[1], "%s", "x")
			if strings.HasSuffix(hint, " ") {
				hint += "x" // the value appended at run time
			}
			root := newRootCmd(&app{ioStreams: ioStreams{stdout: io.Discard, stderr: io.Discard}, lookupEnv: os.LookupEnv})
			cmd, rest, err := root.Find(strings.Fields(hint)[1:])
			if err != nil || cmd == root {
				t.Errorf("%s: hint %q names no command", f, m[1])
				continue
			}
			cmd.InitDefaultHelpFlag()
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: hint %q: %v", f, m[1], err)
				continue
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s: hint %q: %v", f, m[1], err)
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d hints, expected dozens: is the pattern stale?", n)
	}
}

// TestExitCodesREADMETableIsTheTable: the README's exit-code table lists
// exactly the codes and meanings of exitcode.Codes (the one table; --help is
// rendered from it).
func TestExitCodesREADMETableIsTheTable(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "## Exit codes\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| code") {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(exitcode.Codes) {
		t.Fatalf("README lists %d exit codes, the table has %d:\n%s", len(rows), len(exitcode.Codes), strings.Join(rows, "\n"))
	}
	for i, c := range exitcode.Codes {
		if want := fmt.Sprintf("| %d | %s |", c.Code, c.Meaning); rows[i] != want {
			t.Errorf("README row %q, want %q", rows[i], want)
		}
	}
	help := e2eHelp(t)
	for _, c := range exitcode.Codes {
		if !strings.Contains(help, fmt.Sprintf("  %-4d %s", c.Code, c.Meaning)) {
			t.Errorf("--help lacks exit code %d", c.Code)
		}
	}
}

// e2eHelp is `trendfetch --help` as printed.
func e2eHelp(t *testing.T) string {
	t.Helper()
	res := newEnv(t).run("--help")
	if res.code != 0 {
		t.Fatalf("--help: exit %d", res.code)
	}
	return res.stdout
}
