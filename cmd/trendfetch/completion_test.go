package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestCompletionHelpAndVersion: completion scripts for bash, zsh and fish;
// --help lists the exit codes; --version, version and version --json name
// the Go version and the pinned modules; quota status of a fresh machine
// shows its empty buckets.
func TestCompletionHelpAndVersion(t *testing.T) {
	p := newInproc(t, "", nil)
	for args, want := range map[string]string{
		"completion bash": "# bash completion V2 for trendfetch", "completion zsh": "#compdef trendfetch", "completion fish": "# fish completion for trendfetch",
		"--help": "75   stopped cleanly", "--version": "google.golang.org/api v0.309.0", "version": "trendfetch dev ", "quota status": "0/9500",
	} {
		if p.reset(); p.execute(strings.Fields(args)...) != nil || !strings.Contains(p.out.String(), want) {
			t.Errorf("%s: no %q in:\n%s%s", args, want, p.out.String(), p.errOut.String())
		}
	}
	p.reset()
	var v versionInfo
	if err := versionRun(p.a.ioStreams, true); err != nil || json.Unmarshal(p.out.Bytes(), &v) != nil || v.GoVersion != runtime.Version() ||
		v.Modules["google.golang.org/api"] != "v0.309.0" || v.Modules["modernc.org/sqlite"] == "" || v.Version != "dev" {
		t.Errorf("version --json: %+v %v", v, err)
	}
}
