package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummaryNamesSkippedTests (issue 40 item 13) runs `go test -json` on a
// package with a passing, a skipped and a failing test: the summary shows
// the package's result and the failure's output, not the passing test's
// log, and names the skipped test with its reason at the end.
func TestSummaryNamesSkippedTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command (-short)")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/x\n\ngo 1.22\n",
		"x_test.go": `package x
import "testing"
func TestPass(t *testing.T) { t.Log("quiet when passing") }
func TestSkip(t *testing.T) { t.Skip("no chromium found: apt-get install -y chromium") }
func TestFail(t *testing.T) { t.Error("it broke") }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", ".")
	cmd.Dir = dir
	raw, _ := cmd.Output() // exits 1: TestFail
	var out bytes.Buffer
	code := summarize(bytes.NewReader(raw), &out)
	s := out.String()
	if code != 1 || !strings.Contains(s, "it broke") || !strings.Contains(s, "FAIL") || strings.Contains(s, "quiet when passing") {
		t.Errorf("summary (exit %d) lacks the failure or shows the passing test's log:\n%s", code, s)
	}
	if !strings.Contains(s, "1 tests SKIPPED") || !strings.Contains(s, "example.com/x TestSkip: x_test.go:4: no chromium found: apt-get install -y chromium") {
		t.Errorf("summary does not name the skipped test and why:\n%s", s)
	}
}
