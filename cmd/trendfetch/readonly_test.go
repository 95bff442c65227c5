package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyCommandsCreateNothing: on a fresh host (no database, no quota
// database) the read-only commands print an empty result with a note and
// exit 0, and create no file or directory, also beside a --database path
// that does not exist.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	e := newEnv(t)
	missing := filepath.Join(e.dir, "nowhere", "x.db")
	for _, args := range [][]string{
		{"runs"}, {"runs", "--json"}, {"search", "cats"}, {"search", "cats", "--json"},
		{"quota", "status"}, {"quota", "status", "--json"}, {"lease", "list"}, {"lease", "list", "--json"},
		{"--database", missing, "quota", "status"}, {"--database", missing, "runs"},
	} {
		res := e.run(args...)
		if res.code != 0 {
			t.Errorf("%v: exit %d, want 0\n%s", args, res.code, res.stderr)
		}
		if !strings.Contains(res.stderr, "note: no ") {
			t.Errorf("%v: no note that nothing exists yet:\n%s", args, res.stderr)
		}
		if strings.Contains(strings.Join(args, " "), "--json") && !strings.HasPrefix(strings.TrimSpace(res.stdout), "[") && !strings.HasPrefix(strings.TrimSpace(res.stdout), "{") {
			t.Errorf("%v: stdout is not JSON: %q", args, res.stdout)
		}
	}
	for _, dir := range []string{filepath.Join(e.dir, "data"), filepath.Join(e.dir, ".local"), filepath.Join(e.dir, "nowhere")} {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("a read-only command created %s", dir)
		}
	}
}

// TestExampleConfigWorksAsDocumented copies configs/trendfetch.example.yaml
// and sets `cron: "@hourly"` as its comment invites: it must load.
func TestExampleConfigWorksAsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "trendfetch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	text := strings.Replace(string(raw), `  cron: ""`, `  cron: "@hourly"`, 1)
	if text == string(raw) {
		t.Fatal(`the example has no line   cron: ""`)
	}
	cfg := e.writeConfig(text)
	res := e.run("--config", cfg, "regions")
	if res.code != 0 || !strings.Contains(res.stdout, "@hourly") {
		t.Errorf("example with cron @hourly: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = e.run("--config", e.writeConfig(string(raw)), "regions")
	if res.code != 0 {
		t.Errorf("example as shipped: exit %d\n%s", res.code, res.stderr)
	}
}

func TestVersionFlag(t *testing.T) {
	e := newEnv(t)
	a, b := e.run("--version"), e.run("version")
	if a.code != 0 || !strings.HasPrefix(a.stdout, "trendfetch ") || a.stdout != b.stdout {
		t.Errorf("--version: exit %d %q; version: %q", a.code, a.stdout, b.stdout)
	}
}
