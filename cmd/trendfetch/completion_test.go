package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestCompletionAndVersion: completion scripts for bash, zsh and fish;
// --version and version --json name the Go version and the pinned modules.
func TestCompletionAndVersion(t *testing.T) {
	e := newEnv(t)
	for shell, want := range map[string]string{"bash": "# bash completion V2 for trendfetch", "zsh": "#compdef trendfetch", "fish": "# fish completion for trendfetch"} {
		if res := e.run("completion", shell); res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Errorf("completion %s: exit %d, no %q", shell, res.code, want)
		}
	}
	res := e.run("--version")
	if res.code != 0 || !strings.Contains(res.stdout, runtime.Version()) || !strings.Contains(res.stdout, "google.golang.org/api v0.309.0") {
		t.Errorf("--version: exit %d\n%s", res.code, res.stdout)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(e.run("version", "--json").stdout), &v); err != nil || v.GoVersion != runtime.Version() || v.Modules["google.golang.org/api"] != "v0.309.0" || v.Modules["modernc.org/sqlite"] == "" {
		t.Errorf("version --json: %+v %v", v, err)
	}
}
