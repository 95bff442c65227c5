package youtubetest

import (
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// TB is the part of testing.TB the helpers use (*testing.T and *testing.B satisfy it).
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// StartTest serves s on a new loopback httptest.Server, closed by tb.Cleanup, and returns
// its base URL without a trailing slash ("http://127.0.0.1:PORT"; see NewService).
func (s *Server) StartTest(tb TB) (url string) {
	tb.Helper()
	ts := httptest.NewServer(s)
	tb.Cleanup(ts.Close)
	return ts.URL
}

// DataDir returns the recorded data (docs/design.md §7): the directory shared/data beside the
// repository root (the directory of `go env GOMOD`). When it is absent the test is skipped,
// unless CI=true, where it fails: CI must use the recorded data.
func DataDir(tb TB) string {
	tb.Helper()
	mod, err := exec.Command("go", "env", "GOMOD").Output() // the repository's go.mod
	dir := filepath.Join(filepath.Dir(filepath.Dir(strings.TrimSpace(string(mod)))), "shared", "data")
	if err == nil {
		_, err = os.Stat(dir)
	}
	switch {
	case err == nil:
		return dir
	case os.Getenv("CI") == "true":
		tb.Fatalf("recorded YouTube data is required in CI (CI=true): %v; check out ../shared/data next to the repository", err)
	case errors.Is(err, os.ErrNotExist):
		tb.Skipf("skipping: recorded YouTube data not available: %v", err)
	default:
		tb.Fatalf("cannot find the recorded YouTube data: %v", err)
	}
	return ""
}
