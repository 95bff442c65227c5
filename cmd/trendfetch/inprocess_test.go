package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/store"
)

// inproc is one command's process, in-process: an app whose configuration
// (yaml, in t's temp dir, with the database there) is loaded, writing to
// buffers. The commands' logic is tested through their run functions
// with it; what only a process shows stays in the binary tests.
type inproc struct {
	t           *testing.T
	a           *app
	dir, db     string
	cfg         string            // the configuration file
	vars        map[string]string // the environment seen (as env's)
	out, errOut bytes.Buffer
}

// newInproc loads yaml (and env: the environment seen, nothing else) into an app.
func newInproc(t *testing.T, yaml string, env map[string]string) *inproc {
	t.Helper()
	p := &inproc{t: t, dir: t.TempDir()}
	p.db = filepath.Join(p.dir, "trendfetch.db")
	p.cfg = filepath.Join(p.dir, "trendfetch.yaml")
	if err := os.WriteFile(p.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p.vars = map[string]string{}
	maps.Copy(p.vars, env)
	lookup := func(k string) (string, bool) { v, ok := p.vars[k]; return v, ok }
	p.a = &app{ioStreams: ioStreams{stdout: &p.out, stderr: &p.errOut}, lookupEnv: lookup, secrets: &secret.Set{}, flags: map[string]*string{}}
	for _, s := range config.Settings() {
		if s.Flag != "" {
			p.a.flags[s.Flag] = new(string)
		}
	}
	*p.a.flags["config"], *p.a.flags["database"] = p.cfg, p.db
	if err := p.a.loadConfig(); err != nil {
		t.Fatal(err)
	}
	return p
}

// execute runs the command line args in-process as Main does (after
// --config and --database of p), flags parsed by cobra, without Main's
// signals, scrubbing and error report; the app then holds what it loaded.
func (p *inproc) execute(args ...string) error {
	root := newRootCmd(p.a)
	root.SetArgs(append([]string{"--config", p.cfg, "--database", p.db}, args...))
	return root.ExecuteContext(context.Background())
}

// run is execute ended as Main ends a process: its exit code, stdout, and
// stderr with Main's report of the error (stderr: as people read it).
func (p *inproc) run(args ...string) result {
	p.reset()
	err := p.execute(args...)
	code := exit(err)
	if err != nil {
		p.a.reportError(err, code)
	}
	return result{code: code, stdout: p.out.String(), stderr: humanErrors(p.errOut.String()), rawStderr: p.errOut.String()}
}

// writeConfig writes yaml to a new file in p's directory (for --config) and returns its path.
func (p *inproc) writeConfig(yaml string) string {
	p.t.Helper()
	f, err := os.CreateTemp(p.dir, "*.yaml")
	if err == nil {
		_, err = f.WriteString(yaml)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return f.Name()
}

// capture runs the engine's run of regions in-process against the
// emulator at url (p's env gives the API key, YOUTUBE_API_KEY).
func (p *inproc) capture(url string, regions ...string) {
	p.t.Helper()
	p.a.cfg.API.Endpoint = url
	if err := p.engine().Run(context.Background(), regions, false); err != nil {
		p.t.Fatalf("run %v: %v\n%s", regions, err, p.errOut.String())
	}
}

// sampleInproc is sampleEnv in-process: the emulator serving its sample
// chart as each of regions, its URL, and an inproc with an API key set.
func sampleInproc(t *testing.T, regions ...string) (*youtubetest.Server, string, *inproc) {
	emu := youtubetest.New()
	for _, r := range regions {
		emu.SetChart(r, youtubetest.Sample())
	}
	return emu, emu.StartTest(t), newInproc(t, "", map[string]string{"YOUTUBE_API_KEY": "k"})
}

// dbPath is the database file, as env's.
func (p *inproc) dbPath() string { return p.db }

// engine is the app's engine.
func (p *inproc) engine() *engine.Engine { return p.a.engine() }

// reset empties the output buffers.
func (p *inproc) reset() { p.out.Reset(); p.errOut.Reset() }

// seed stores n complete chart captures of 3 videos in each region, an
// hour apart from 2026-11-01 00:00 UTC, each by its own successful run.
func (p *inproc) seed(n int, regions ...string) {
	p.t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, p.db)
	if err != nil {
		p.t.Fatal(err)
	}
	defer st.Close()
	for c := range n {
		for _, region := range regions {
			at := time.Date(2026, 11, 1, c, 0, 0, 0, time.UTC)
			run, err := st.StartRun(ctx, store.Run{Region: region, StartedAt: at})
			if err != nil {
				p.t.Fatal(err)
			}
			vs := make([]store.Video, 3)
			for i := range vs {
				views := int64(1000*c + i)
				vs[i] = store.Video{ID: fmt.Sprintf("%s%09d", region[:1], i), Title: fmt.Sprintf("Video %d of %s", i, region), Views: &views}
			}
			if err := st.SaveSnapshot(ctx, store.Snapshot{RunID: run, Region: region, FirstRank: 1, Videos: vs, At: at}); err != nil {
				p.t.Fatal(err)
			}
			if err := st.CompleteCapture(ctx, run, region, store.KindChart, "", at); err != nil {
				p.t.Fatal(err)
			}
			if err := st.FinishRun(ctx, store.Run{ID: run, Region: region, Outcome: store.OutcomeSuccess, Pages: 1, Videos: 3,
				StartedAt: at, FinishedAt: at.Add(time.Second), Units: map[string]int64{"units": 1}}); err != nil {
				p.t.Fatal(err)
			}
		}
	}
}

// exit is the exit code the process would end with on err.
func exit(err error) int { return exitCode(context.Background(), err) }
