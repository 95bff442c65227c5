package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRunsPagesWithBefore: `runs --limit N` says how to get the older runs
// and `--before ID` pages on (issue 31 item 5).
func TestRunsPagesWithBefore(t *testing.T) {
	p := newInproc(t, "", nil)
	p.seed(3, "US")
	ids := func(o runsOptions) []int64 {
		t.Helper()
		p.reset()
		o.io, o.engine, o.asJSON = p.a.ioStreams, p.engine(), true
		var runs []struct{ ID int64 }
		if err := runsRun(context.Background(), &o); err != nil || json.Unmarshal(p.out.Bytes(), &runs) != nil {
			t.Fatalf("runs %+v: %v\n%s", o, err, p.out.String())
		}
		var out []int64
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(runsOptions{limit: 2}); !slices.Equal(got, []int64{3, 2}) || !strings.Contains(p.errOut.String(), "trendfetch runs --before 2") {
		t.Errorf("runs --limit 2: %v, stderr %q; want [3 2] and the next page's command", got, p.errOut.String())
	}
	if got := ids(runsOptions{limit: 2, before: 2}); !slices.Equal(got, []int64{1}) || strings.Contains(p.errOut.String(), "--before") {
		t.Errorf("runs --before 2: %v, stderr %q; want [1] and no next page", got, p.errOut.String())
	}
	if got := ids(runsOptions{limit: 5, region: "gb"}); len(got) != 0 {
		t.Errorf("runs --region GB: %v, want none", got)
	}
}
