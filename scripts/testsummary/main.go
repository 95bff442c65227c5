// Command testsummary reads `go test -json` on standard input and writes what `go test` without -v
// shows (each package's result, a failed test's output), then names every skipped test with its
// reason: `make test` passing with a test skipped (a tool missing) says so. It exits 1 when a test
// or package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action, Package, Test, Output string
}

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout))
}

// summarize copies in's results to out as described above; 1 when something failed.
func summarize(in io.Reader, out io.Writer) int {
	outputs := map[string][]string{} // a test's (or package's) output lines so far, by "pkg test"
	var skipped []string
	code := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(out, sc.Text()) // not JSON: the go command's own message
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			outputs[key] = append(outputs[key], e.Output)
		case "build-output": // a package that does not compile
			fmt.Fprint(out, e.Output)
		case "fail":
			code = 1
			fmt.Fprint(out, strings.Join(outputs[key], ""))
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason(outputs[key])))
			}
		case "pass":
			if e.Test == "" {
				fmt.Fprint(out, strings.Join(outputs[key], "")) // "ok  pkg  1.2s"
			}
		}
		if e.Action != "output" && e.Test != "" {
			delete(outputs, key)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(out, "\n%d tests SKIPPED (install what each names, or see .ci/run):\n  %s\n", len(skipped), strings.Join(skipped, "\n  "))
	}
	return code
}

// reason is the last line a skipped test logged (its t.Skip message).
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			return l
		}
	}
	return "(no reason given)"
}
