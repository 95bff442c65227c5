package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// TestRunRegions: `run` needs --region or --all, not both, and region codes; --all runs the
// configured regions in order, --metrics-textfile DIR leaving each region's metrics there.
func TestRunRegions(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	emu.SetChart("GB", youtubetest.Sample())
	p := newInproc(t, "regions: [GB, US]\n", map[string]string{"YOUTUBE_API_KEY": "k"})
	p.a.cfg.API.Endpoint = emu.StartTest(t)
	ctx := context.Background()
	run := func(o runOptions) error {
		o.engine, o.cfg = p.engine(), p.a.cfg
		return runRegions(ctx, &o)
	}
	for _, bad := range []runOptions{{}, {regions: []string{"US"}, all: true}, {regions: []string{"XX"}}} {
		if err := run(bad); exit(err) != exitcode.Usage {
			t.Errorf("run %+v: %v (exit %d), want a usage error", bad, err, exit(err))
		}
	}
	dir := t.TempDir()
	if err := run(runOptions{all: true, textfiles: true, textfileDir: dir}); err != nil {
		t.Fatal(err)
	}
	runs, err := openStore(t, p.db).Runs(ctx, 10)
	if err != nil || len(runs) != 2 || runs[0].Region != "US" || runs[1].Region != "GB" {
		t.Fatalf("runs of --all: %+v %v, want GB then US", runs, err)
	}
	for _, region := range []string{"GB", "US"} {
		if _, err := os.Stat(filepath.Join(dir, "trendfetch_"+region+".prom")); err != nil {
			t.Errorf("--metrics-textfile: %v", err)
		}
	}
}
