package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestPruneOlderThan: a dry run counts the captures older than the age and
// removes nothing; the prune then removes them (JSON: policy null, before
// set); an age that does not parse or fit the other flags is a usage error.
func TestPruneOlderThan(t *testing.T) {
	p := newInproc(t, "", nil)
	p.seed(3, "US", "GB")
	ctx := context.Background()
	prune := func(o pruneOptions) (string, error) {
		p.reset()
		o.io, o.engine = p.a.ioStreams, p.engine()
		err := pruneRun(ctx, &o)
		return p.out.String(), err
	}
	out, err := prune(pruneOptions{olderThan: "1d", dryRun: true})
	if err != nil || !strings.HasPrefix(out, "would remove 6 captures (18 entries)") || !strings.Contains(out, "older than ") {
		t.Fatalf("dry run: %v %q", err, out)
	}
	out, err = prune(pruneOptions{olderThan: "1d", asJSON: true})
	var rep struct {
		Policy   *string `json:"policy"`
		Before   *string `json:"before"`
		Captures int     `json:"captures"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Policy != nil || rep.Before == nil || rep.Captures != 6 {
		t.Fatalf("prune --json: %v %s", err, out)
	}
	if out, err = prune(pruneOptions{olderThan: "1d", dryRun: true}); err != nil || !strings.HasPrefix(out, "would remove 0 captures") {
		t.Errorf("after the prune: %v %q, want nothing left to remove", err, out)
	}
	for _, bad := range []pruneOptions{{olderThan: "1m"}, {olderThan: "90d", asOf: "2026-12-31"}, {asOf: "yesterday"}, {policy: "forever"}} {
		if _, err := prune(bad); exit(err) != exitcode.Usage {
			t.Errorf("prune %+v: %v (exit %d), want a usage error", bad, err, exit(err))
		}
	}
}
