package fetch_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestRunRecordsShadowDenials: a shadow bucket tighter than the enforced one denies nothing, and
// the stored run record counts what it would have denied, per bucket and call site.
func TestRunRecordsShadowDenials(t *testing.T) {
	f := newFixture(t, sqliteBackend(t), nil, nil)
	lim, err := quota.New(sqliteBackend(t), []quota.Bucket{{Name: "units", Limit: 100, Window: time.Hour},
		{Name: "tight", Limit: 1, Window: time.Hour, Shadow: true}},
		quota.Costs{callsite.VideosList: {{Bucket: "units", Units: 1}, {Bucket: "tight", Units: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	f.runner.Limiter = lim
	ctx := context.Background()
	run, err := f.runner.Run(ctx, "US", fetch.Lease{})
	if err != nil || run.Outcome != store.OutcomeSuccess || f.emu.Calls(callsite.VideosList) != 2 {
		t.Fatalf("run: %v, outcome %s after %d calls; want success after 2", err, run.Outcome, f.emu.Calls(callsite.VideosList))
	}
	runs, err := f.store.Runs(ctx, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	want := map[string]map[string]int64{"tight": {callsite.VideosList: 1}}
	if !reflect.DeepEqual(runs[0].ShadowDenials, want) {
		t.Errorf("stored shadow denials = %v; want %v (the second page is over the shadow bucket)", runs[0].ShadowDenials, want)
	}
}
