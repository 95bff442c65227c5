package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/store"
)

// TestRunsPagesWithBefore: `runs --limit N` says how to get the older runs
// and `--before ID` pages on (issue 31 item 5).
func TestRunsPagesWithBefore(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(filepath.Dir(e.dbPath()), 0o755)
	st, err := store.Open(context.Background(), e.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.StartRun(context.Background(), store.Run{Credential: "default", Region: "US", PID: 1, Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	ids := func(res result) []int64 {
		t.Helper()
		var runs []struct{ ID int64 }
		if err := json.Unmarshal([]byte(res.stdout), &runs); res.code != 0 || err != nil {
			t.Fatalf("exit %d (%v): %s%s", res.code, err, res.stdout, res.stderr)
		}
		var out []int64
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	res := e.run("runs", "--json", "--limit", "2")
	if got := ids(res); !slices.Equal(got, []int64{3, 2}) || !strings.Contains(res.stderr, "trendfetch runs --before 2") {
		t.Errorf("runs --limit 2: %v, stderr %q; want [3 2] and the next page's command", got, res.stderr)
	}
	res = e.run("runs", "--json", "--limit", "2", "--before", "2")
	if got := ids(res); !slices.Equal(got, []int64{1}) || strings.Contains(res.stderr, "--before") {
		t.Errorf("runs --before 2: %v, stderr %q; want [1] and no next page", got, res.stderr)
	}
}
