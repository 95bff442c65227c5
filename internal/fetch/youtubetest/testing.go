package youtubetest

// This file holds the helpers for tests. It does not import package testing, so that the
// ytemulator binary, which links this package, does not link it either: the helpers take
// the TB interface, which *testing.T and *testing.B satisfy.

import (
	"errors"
	"net/http/httptest"
	"os"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Cleanup(func())
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// StartTest serves s on a new loopback httptest.Server, closed by tb.Cleanup, and returns
// its base URL without a trailing slash ("http://127.0.0.1:PORT"). Point the client at
// url+"/" (see NewService).
func (s *Server) StartTest(tb TB) (url string) {
	tb.Helper()
	ts := httptest.NewServer(s)
	tb.Cleanup(ts.Close)
	return ts.URL
}

// DataDir returns the recorded data directory (see FindDataDir) for a test, looking up from
// the working directory (the package directory under go test). When it is absent the test
// is skipped, unless the environment has CI=true, where it fails: CI must run against the
// recorded data.
func DataDir(tb TB) string {
	tb.Helper()
	dir, err := FindDataDir(".")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("recorded YouTube data is required in CI (CI=true): %v; check out ../shared/data next to the repository", err)
		}
		if errors.Is(err, os.ErrNotExist) {
			tb.Skipf("skipping: recorded YouTube data not available: %v", err)
		}
		tb.Fatal(err)
	}
	return dir
}
