package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/pgtest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// binary is the trendfetch executable built once by TestMain; the CLI is
// tested at the process level (exit codes, stdout, stderr).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trendfetch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "trendfetch")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building trendfetch: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	pg.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pg is the package's PostgreSQL server, started by the first test that
// needs one (pgDatabase) and stopped by TestMain.
var pg pgtest.Shared

// pgDatabase returns the package's PostgreSQL server and the URL of an
// empty database of t's own; without a server it skips t, or fails it
// under CI=true (pgtest.Require).
func pgDatabase(t *testing.T) (*pgtest.Server, string) {
	t.Helper()
	s := pg.Server(t)
	return s, s.Database(t)
}

// env is a sandbox for one CLI invocation: its own XDG dirs, database and
// quota database, and an explicit environment (nothing inherited but PATH).
type env struct {
	t    *testing.T
	dir  string
	vars map[string]string
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	return &env{t: t, dir: dir, vars: map[string]string{
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  dir,
		"XDG_CONFIG_HOME":       filepath.Join(dir, "config"),
		"XDG_DATA_HOME":         filepath.Join(dir, "data"),
		"TRENDFETCH_LOG_FORMAT": "json",
	}}
}

// sampleEnv serves the emulator's built-in sample chart as each of regions
// and returns it, its URL, and a sandbox env with an API key set.
func sampleEnv(t *testing.T, regions ...string) (*youtubetest.Server, string, *env) {
	t.Helper()
	emu := youtubetest.New()
	for _, r := range regions {
		emu.SetChart(r, youtubetest.Sample())
	}
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	return emu, url, e
}

func (e *env) dbPath() string { return filepath.Join(e.dir, "data", "trendfetch", "trendfetch.db") }

type result struct {
	code           int
	stdout, stderr string
	// rawStderr is stderr as written; stderr renders the final JSON error
	// event as people read it (see humanErrors).
	rawStderr string
}

// humanErrors renders each final error event of a JSON log ("trendfetch
// exits") as the lines the console format prints ("trendfetch: ..." and
// "Try: ..."), so that assertions about the error read the same in both
// formats; TestJSONLogsArePureJSON checks the raw form.
func humanErrors(stderr string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(stderr, "\n") {
		var ev struct {
			Message string `json:"message"`
			Error   string `json:"error"`
			Hint    string `json:"hint"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &ev) == nil && ev.Message == "trendfetch exits" {
			b.WriteString("trendfetch: " + ev.Error + "\n")
			if ev.Hint != "" {
				b.WriteString("Try: " + ev.Hint + "\n")
			}
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

func (e *env) run(args ...string) result {
	e.t.Helper()
	cmd := exec.Command(binary, args...)
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("running trendfetch %v: %v", args, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: humanErrors(stderr.String()), rawStderr: stderr.String()}
}

func (e *env) writeConfig(yaml string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, "trendfetch.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// usChart loads the recorded 2018-11-01 US chart (200 videos).
func usChart(t *testing.T) []*youtube.Video {
	t.Helper()
	data := youtubetest.DataDir(t)
	_, videos, err := youtubetest.LoadCSVFile(filepath.Join(data, "api_snapshot_2018-11-01", "18.01.11_US_videos.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(videos) != 200 {
		t.Fatalf("US chart has %d rows, want 200", len(videos))
	}
	return videos
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestRunEndToEndRecordedUSChart(t *testing.T) {
	chart := usChart(t)
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "test-key-e2e"

	res := e.run("--api-endpoint", url, "run", "--region", "us")
	if res.code != 0 {
		t.Fatalf("run exit %d, stderr:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, `"message":"run finished"`) || !strings.Contains(res.stderr, `"outcome":"success"`) {
		t.Errorf("no JSON run summary on stderr:\n%s", res.stderr)
	}

	st := openStore(t, e.dbPath())
	runs, err := st.Runs(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs recorded, want 1", len(runs))
	}
	r := runs[0]
	if r.Outcome != store.OutcomeSuccess || r.Pages != 4 || r.Videos != 200 || r.Units["units"] != 4 {
		t.Errorf("run = %+v, want success, 4 pages, 200 videos, 4 units", r)
	}
	got, err := st.Chart(context.Background(), r.ID, "US")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(chart) {
		t.Fatalf("stored chart has %d entries, want %d", len(got), len(chart))
	}
	for i, c := range got {
		if c.Rank != i+1 || c.VideoID != chart[i].Id {
			t.Fatalf("rank %d: stored %s at rank %d, want %s (CSV row order)", i+1, c.VideoID, c.Rank, chart[i].Id)
		}
	}
	if u := emu.Units("test-key-e2e"); u != 4 {
		t.Errorf("emulator counted %d units, want 4", u)
	}

	// The limiter's own count equals the emulator's.
	res = e.run("quota", "status", "--json")
	if res.code != 0 {
		t.Fatalf("quota status exit %d: %s", res.code, res.stderr)
	}
	var status quota.StatusView
	if err := json.Unmarshal([]byte(res.stdout), &status); err != nil {
		t.Fatalf("quota status --json: %v\n%s", err, res.stdout)
	}
	if len(status.Buckets) == 0 || status.Buckets[0].Name != "units" || status.Buckets[0].Used != emu.Units("test-key-e2e") {
		t.Errorf("limiter status %+v, want units used = emulator's %d", status.Buckets, emu.Units("test-key-e2e"))
	}

	// A known title from the file is found first.
	want := chart[57]
	res = e.run("search", "--json", "--region", "US", want.Snippet.Title)
	if res.code != 0 {
		t.Fatalf("search exit %d: %s", res.code, res.stderr)
	}
	var hits []struct {
		VideoID string `json:"video_id"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &hits); err != nil {
		t.Fatalf("search --json: %v\n%s", err, res.stdout)
	}
	if len(hits) == 0 || hits[0].VideoID != want.Id {
		t.Fatalf("search %q: first hit %+v, want %s", want.Snippet.Title, hits, want.Id)
	}
	res = e.run("search", want.Snippet.Title, "--limit", "3")
	if res.code != 0 || !strings.Contains(res.stdout, want.Snippet.Title) {
		t.Errorf("human search output (exit %d):\n%s", res.code, res.stdout)
	}
	// The snippet under the first hit shows its matches (from the offsets) in brackets off a terminal.
	if lines := strings.Split(res.stdout, "\n"); len(lines) < 2 || !regexp.MustCompile(`^    .*\[[^\]]+\]`).MatchString(lines[1]) {
		t.Errorf("human search output has no highlighted snippet:\n%s", res.stdout)
	}

	res = e.run("runs")
	if res.code != 0 || !strings.Contains(res.stdout, "success") || !strings.Contains(res.stdout, "units=4") {
		t.Errorf("runs output (exit %d):\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestRunDeniedStopsCleanly(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", usChart(t))
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	cfg := e.writeConfig(`
quota:
  buckets:
    - {name: units, limit: 2, window: 1h}
  costs:
    videos.list: {units: 1}
`)
	res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 75 {
		t.Fatalf("exit %d, want 75; stderr:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, `quota denied videos.list by bucket \"units\"`) && !strings.Contains(res.stderr, `quota denied videos.list by bucket "units"`) {
		t.Errorf("stderr does not say why:\n%s", res.stderr)
	}
	if n := emu.Calls("videos.list"); n != 2 {
		t.Errorf("emulator saw %d videos.list calls, want exactly 2", n)
	}
	st := openStore(t, e.dbPath())
	runs, err := st.Runs(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.Outcome != store.OutcomeDenied || r.Pages != 2 || r.Videos != 100 || r.RetryAfter <= 0 || r.RetryAt.IsZero() {
		t.Errorf("run = %+v, want denied after 2 pages / 100 videos with a Retry-After", r)
	}
	if n, _ := st.CountVideos(context.Background()); n != 100 {
		t.Errorf("%d videos stored, want 100", n)
	}
	// A second run is denied before any API call.
	res = e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 75 || emu.Calls("videos.list") != 2 {
		t.Errorf("second run: exit %d, %d calls; want 75 and still 2 calls", res.code, emu.Calls("videos.list"))
	}
}

func TestBadInputExits2WritingNothing(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	url := emu.StartTest(t)
	for _, tc := range []struct {
		name   string
		config string
		noKey  bool
		args   []string
		want   string
	}{
		{name: "region UK", args: []string{"run", "--region", "UK"}, want: "did you mean GB?"},
		{name: "unknown config key", config: "databse: /tmp/x.db\n", args: []string{"run", "--region", "US"}, want: `unknown key databse: did you mean "database"?`},
		{name: "negative limit", config: "quota:\n  buckets:\n    - {name: units, limit: -1, window: 24h}\n  costs:\n    videos.list: {units: 1}\n", args: []string{"run", "--region", "US"}, want: "quota.buckets[0].limit = -1: must be > 0"},
		{name: "missing API key", noKey: true, args: []string{"run", "--region", "US"}, want: "no API key: set $YOUTUBE_API_KEY"},
		{name: "unbalanced quote", args: []string{"search", `"wake up`}, want: "unbalanced"},
		{name: "search limit", args: []string{"search", "x", "--limit", "-1"}, want: "--limit -1"},
		{name: "unknown flag", args: []string{"run", "--regoin", "US"}, want: "unknown flag: --regoin"},
		{name: "config is a directory", args: []string{"--config", "/", "run", "--region", "US"}, want: "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if !tc.noKey {
				e.vars["YOUTUBE_API_KEY"] = "k"
			}
			args := append([]string{"--api-endpoint", url}, tc.args...)
			if tc.config != "" {
				args = append([]string{"--config", e.writeConfig(tc.config)}, args...)
			}
			calls := emu.TotalCalls()
			res := e.run(args...)
			if res.code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if !strings.HasPrefix(lines[0], "trendfetch: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr first line %q, want it to contain %q", lines[0], tc.want)
			}
			if len(lines) > 2 || (len(lines) == 2 && !strings.HasPrefix(lines[1], "Try: ")) {
				t.Errorf("want a one-line error (plus at most a Try: hint), got:\n%s", res.stderr)
			}
			if res.stdout != "" {
				t.Errorf("stdout not empty: %q", res.stdout)
			}
			if emu.TotalCalls() != calls {
				t.Error("an API call was made")
			}
			if _, err := os.Stat(filepath.Join(e.dir, "data")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("something was written under the data dir (%v)", err)
			}
		})
	}
}

// TestSignalsAndLease: SIGTERM mid-run exits 143 and records the run as
// interrupted with whole pages only; while a run holds the region's lease a
// second `run` of that region exits 3 at once.
func TestSignalsAndLease(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	inFlight := make(chan struct{}, 1)
	emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("pageToken") != "" {
			select {
			case inFlight <- struct{}{}:
			default:
			}
			<-r.Context().Done() // page 2 hangs until the client gives up
			return true
		}
		return false
	})
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	cmd := exec.Command(binary, "--api-endpoint", url, "run", "--region", "US")
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inFlight:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("page 2 never requested; stderr:\n%s", stderr.String())
	}

	res := e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 3 || !strings.Contains(res.stderr, "already being run") {
		t.Errorf("second run while the first holds the lease: exit %d, stderr:\n%s", res.code, res.stderr)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("after SIGTERM: %v, want exit 143; stderr:\n%s", err, stderr.String())
	}
	st := openStore(t, e.dbPath())
	runs, err := st.Runs(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Outcome != store.OutcomeInterrupted || runs[0].Pages != 1 || runs[0].Videos != 50 {
		t.Fatalf("runs = %+v, want one interrupted run with page 1 (50 videos) kept", runs)
	}
	if n, _ := st.CountVideos(context.Background()); n != 50 {
		t.Errorf("%d videos stored, want 50", n)
	}
	// The interrupted run's capture is partial, and left out of --every day.
	if c, es, err := st.CaptureAt(context.Background(), store.CaptureQuery{Region: "US", Partial: true}); err != nil || c.Complete || len(es) != 50 {
		t.Errorf("capture of the interrupted run: %+v, %d entries, %v; want partial with 50", c, len(es), err)
	}
	if res := e.run("export", "--every", "day"); res.code != 0 || strings.Count(res.stdout, "\n") != 1 {
		t.Errorf("export --every day after SIGTERM: exit %d, %d lines (want the header only)", res.code, strings.Count(res.stdout, "\n"))
	}

	emu.SetHook(nil)
	res = e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 {
		t.Errorf("run after the interrupted one: exit %d\n%s", res.code, res.stderr)
	}
}

// TestRedisBackendDownPolicies runs the binary against a real redis-server
// that is killed: a fail-open call site runs unmetered (exit 0), a
// fail-closed one stops like a denial (exit 75); both runs are recorded.
func TestRedisBackendDownPolicies(t *testing.T) {
	srv := redistest.Start(t)
	_, url, e := sampleEnv(t, "US")
	e.vars["TRENDFETCH_REDIS_URL"] = srv.URL()

	res := e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 {
		t.Fatalf("with Redis up: exit %d\n%s", res.code, res.stderr)
	}
	res = e.run("quota", "status", "--json")
	var status quota.StatusView
	if err := json.Unmarshal([]byte(res.stdout), &status); err != nil || status.Backend != "redis" || status.Buckets[0].Used != 2 {
		t.Fatalf("quota status on redis: %v %+v\n%s", err, status, res.stderr)
	}

	srv.Kill()
	res = e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || !strings.Contains(res.stderr, "quota backend unavailable") {
		t.Errorf("fail-open with Redis down: exit %d, want 0 with a warning\n%s", res.code, res.stderr)
	}
	cfg := e.writeConfig("quota:\n  policies:\n    videos.list: fail-closed\n")
	res = e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 75 || !strings.Contains(res.stderr, "limiter unavailable") {
		t.Errorf("fail-closed with Redis down: exit %d, want 75\n%s", res.code, res.stderr)
	}
	res = e.run("quota", "status")
	if res.code != 1 || !strings.Contains(res.stdout, "UNREACHABLE") {
		t.Errorf("quota status with Redis down: exit %d, want 1 and UNREACHABLE\n%s%s", res.code, res.stdout, res.stderr)
	}

	st := openStore(t, e.dbPath())
	runs, err := st.Runs(context.Background(), 10)
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs: %v, %d recorded, want 3", err, len(runs))
	}
	// Newest first: fail-closed, fail-open, normal.
	if runs[0].Outcome != store.OutcomeDenied || !strings.Contains(runs[0].Reason, "limiter unavailable") {
		t.Errorf("fail-closed run recorded as %+v", runs[0])
	}
	if runs[1].Outcome != store.OutcomeSuccessUnmetered || runs[1].Unmetered != 2 {
		t.Errorf("fail-open run recorded as %+v, want success_unmetered with 2 unmetered calls", runs[1])
	}
}

// skipIfShort skips a slow test (real servers, many processes, waits of seconds) under
// `go test -short`, except in CI (CI=true), where every test must run: there -short is ignored.
func skipIfShort(t *testing.T, why string) {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: " + why)
	}
}
