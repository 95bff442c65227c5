package main

// Process-level fault tests (issue 6): kill -9 mid-ingest, 8 processes on
// one database and one Redis, Redis faults during runs, a full or read-only
// filesystem, and bad CLI input. Each runs the real binary against the
// emulator and real SQLite files (and a real redis-server where named).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// proc is a started trendfetch process.
type proc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	start  time.Time
}

func (e *env) spawn(args ...string) *proc {
	e.t.Helper()
	p := &proc{cmd: exec.Command(binary, args...)}
	for k, v := range e.vars {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stderr = &p.stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// wait waits for p; it kills p and fails the test if it runs longer than
// limit (a hang guard, not a performance assertion). It returns the exit
// code, -1 when p died of a signal.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	timer := time.AfterFunc(limit, func() { p.cmd.Process.Kill() })
	err := p.cmd.Wait()
	if !timer.Stop() {
		t.Fatalf("trendfetch %v still running after %s (hang); stderr:\n%s", p.cmd.Args[1:], limit, p.stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("trendfetch %v: %v", p.cmd.Args[1:], err)
	return 0
}

// runBounded runs trendfetch like e.run but fails the test when it takes
// longer than limit.
func (e *env) runBounded(limit time.Duration, args ...string) result {
	e.t.Helper()
	p := e.spawn(args...)
	code := p.wait(e.t, limit)
	return result{code: code, stderr: humanErrors(p.stderr.String()), rawStderr: p.stderr.String()}
}

// assertNoPanic fails when stderr shows a Go panic or a goroutine dump.
func assertNoPanic(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("panic or goroutine dump on stderr:\n%s", stderr)
	}
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// fixed is a chart length for checkStore: n for every region.
func fixed(n int) func(string) int { return func(string) int { return n } }

// chartRow is what the entries table holds for one run's chart capture.
type chartRow struct {
	rows, minRank, maxRank int
}

// chartRows returns each run's chart rows in st: how many, lowest and
// highest rank.
func chartRows(t *testing.T, st *store.Store) map[int64]chartRow {
	t.Helper()
	rows, err := st.DB().QueryContext(context.Background(), `SELECT c.run_id, count(*), min(e.rank), max(e.rank) FROM captures c JOIN entries e ON e.capture_id = c.id WHERE c.kind = 'chart' GROUP BY c.run_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	byRun := map[int64]chartRow{}
	for rows.Next() {
		var id int64
		var c chartRow
		if err := rows.Scan(&id, &c.rows, &c.minRank, &c.maxRank); err != nil {
			t.Fatal(err)
		}
		byRun[id] = c
	}
	return byRun
}

// checkStore opens the database like a run does (store.Open), runs the
// integrity checks (PRAGMA integrity_check, foreign keys, FTS5
// integrity-check of both indexes against videos) and checks that every
// run's stored chart is whole pages: its snapshot rows are contiguous ranks
// from 1, a multiple of 50 (or the whole chart), and match the run's pages
// and videos counters, which are written in the same transaction. It
// returns the runs, newest first.
func checkStore(t *testing.T, path string, chartLen func(region string) int) []store.Run {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("store.Open after the fault: %v", err)
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		t.Fatalf("database damaged: %v", err)
	}
	runs, err := st.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	byRun := chartRows(t, st)
	for _, r := range runs {
		c := byRun[r.ID]
		if c.rows != r.Videos || (c.rows > 0 && (c.minRank != 1 || c.maxRank != c.rows)) {
			t.Errorf("run %d (%s): %d snapshot rows, ranks %d-%d, but the run counts %d videos in %d pages", r.ID, r.Outcome, c.rows, c.minRank, c.maxRank, r.Videos, r.Pages)
		}
		n := chartLen(r.Region)
		if c.rows%50 != 0 && c.rows != n {
			t.Errorf("run %d (%s): %d chart rows stored: a partial page", r.ID, r.Outcome, c.rows)
		}
		if want := min(r.Pages*50, n); r.Pages > 0 && c.rows != want {
			t.Errorf("run %d: %d rows for %d pages, want %d", r.ID, c.rows, r.Pages, want)
		}
	}
	return runs
}

// TestKill9DuringIngest kills `trendfetch run` with SIGKILL 20 times at
// random points of a 200-video ingest: half after a random delay from the
// start (before the database exists, during migrations, between pages), half
// from the emulator 0-3 ms after it answers a random page, so that the kill
// lands while the page is decoded or its transaction is open. After each
// kill the database passes the integrity checks with whole pages only, the
// killed run's record shows the units it reserved (the API's charge, plus at
// most the call in flight), and the next run succeeds at once (the killed
// run's 1 h lease is stale: its holder is gone from this host) and marks the
// killed run abandoned.
func TestKill9DuringIngest(t *testing.T) {
	skipIfShort(t, "kills 20 processes")
	chart := usChart(t)
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	var (
		mu        sync.Mutex
		onRequest func()
	)
	emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		time.Sleep(15 * time.Millisecond) // a slow API: the run lasts long enough to be hit
		mu.Lock()
		f := onRequest
		mu.Unlock()
		if f != nil {
			f()
		}
		return false
	})
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	cfg := e.writeConfig("runs:\n  lease_ttl: 1h\n") // only a takeover frees the region in time
	args := []string{"--config", cfg, "--api-endpoint", url, "run", "--region", "US"}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	var killed, finished, noDB, noRecord, stillRunning, takeovers int
	pagesAtKill := map[int]int{}
	for i := range 20 {
		unitsBefore := emu.Units("k")
		p := e.spawn(args...)
		if i%2 == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			p.cmd.Process.Kill()
		} else {
			k, after := 1+rng.IntN(4), time.Duration(rng.IntN(4))*time.Millisecond
			var n atomic.Int32
			mu.Lock()
			onRequest = func() {
				if int(n.Add(1)) == k {
					time.AfterFunc(after, func() { p.cmd.Process.Kill() })
				}
			}
			mu.Unlock()
		}
		code := p.wait(t, 20*time.Second)
		mu.Lock()
		onRequest = nil
		mu.Unlock()
		switch code {
		case -1:
			killed++
		case 0:
			finished++ // the kill came too late
		default:
			t.Fatalf("kill %d: exit %d, stderr:\n%s", i, code, p.stderr.String())
		}

		charged := emu.Units("k") - unitsBefore
		var killedRun *store.Run
		if _, err := os.Stat(e.dbPath()); err != nil {
			noDB++
		} else {
			runs := checkStore(t, e.dbPath(), fixed(len(chart)))
			if len(runs) > 0 && runs[0].PID == p.cmd.Process.Pid {
				killedRun = &runs[0]
				pagesAtKill[runs[0].Pages]++
				if killedRun.Outcome == store.OutcomeRunning {
					stillRunning++
					// Units are recorded as they are reserved, before the call is sent.
					if u := killedRun.Units["units"]; u < charged || u > charged+1 {
						t.Errorf("kill %d: the killed run shows %d units, the API charged %d", i, u, charged)
					}
				}
			} else {
				noRecord++
				if charged != 0 {
					t.Errorf("kill %d: the API charged %d units to a run with no record", i, charged)
				}
			}
		}

		// The next run succeeds at once: the dead holder's lease (1 h) is
		// stale by restic's rule and taken over.
		res := e.runBounded(20*time.Second, args...)
		if strings.Contains(res.stderr, "took over the run lease") {
			takeovers++
		}
		if res.code != 0 {
			t.Fatalf("run after kill %d: exit %d, stderr:\n%s", i, res.code, res.stderr)
		}
		assertNoPanic(t, res.stderr)
		runs := checkStore(t, e.dbPath(), fixed(len(chart)))
		if runs[0].Outcome != store.OutcomeSuccess || runs[0].Videos != len(chart) {
			t.Fatalf("run after kill %d: %+v, want success with %d videos", i, runs[0], len(chart))
		}
		for _, r := range runs {
			if r.Outcome == store.OutcomeRunning {
				t.Errorf("after kill %d: run %d still marked running", i, r.ID)
			}
			// A kill after the run recorded its end leaves that outcome.
			if killedRun != nil && killedRun.Outcome == store.OutcomeRunning && r.ID == killedRun.ID && r.Outcome != store.OutcomeAbandoned {
				t.Errorf("killed run %d recorded as %s (%s), want abandoned", r.ID, r.Outcome, r.Reason)
			}
		}
	}
	t.Logf("%d killed, %d finished before the kill; %d before the database existed, %d before the run record, %d left marked running; pages stored at the kill: %v; %d stale leases taken over",
		killed, finished, noDB, noRecord, stillRunning, pagesAtKill, takeovers)
	if killed < 10 {
		t.Errorf("only %d of 20 runs were killed mid-way", killed)
	}
}

// regionCharts loads the recorded 2018-11-01 charts of codes.
func regionCharts(t *testing.T, codes []string) map[string][]*youtube.Video {
	t.Helper()
	data := youtubetest.DataDir(t)
	out := map[string][]*youtube.Video{}
	for _, c := range codes {
		_, v, err := youtubetest.LoadCSVFile(filepath.Join(data, "api_snapshot_2018-11-01", "18.01.11_"+c+"_videos.csv"))
		if err != nil {
			t.Fatal(err)
		}
		out[c] = v
	}
	return out
}

func quotaStatus(t *testing.T, e *env, args ...string) quota.StatusView {
	t.Helper()
	res := e.run(append(args, "quota", "status", "--json")...)
	var st quota.StatusView
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || len(st.Buckets) == 0 {
		t.Fatalf("quota status --json (exit %d): %v\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	return st
}

func bucketUsed(st quota.StatusView, name string) int64 {
	for _, b := range st.Buckets {
		if b.Name == name {
			return b.Used
		}
	}
	return -1
}

// TestEightRegionsAtOnce starts 8 `trendfetch run` processes for 8 regions
// at the same moment on one SQLite file and one quota backend (a real
// redis-server, and the embedded quota.db): none fails with "database is
// locked", every run is recorded, and the limiter's count equals the units
// the emulator charged. With a limit smaller than the demand some runs are
// denied (exit 75) and the total admitted is exactly the limit, never more.
func TestEightRegionsAtOnce(t *testing.T) {
	codes := []string{"US", "GB", "DE", "FR", "CA", "JP", "KR", "MX"}
	charts := regionCharts(t, codes)
	var demand int64
	for _, c := range charts {
		demand += int64((len(c) + 49) / 50)
	}
	for _, tc := range []struct {
		name, backend string
		limit         int64
	}{
		{"redis", "redis", 0},
		{"sqlite", "sqlite", 0},
		{"redis limited", "redis", 13},
		{"sqlite limited", "sqlite", 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu := youtubetest.New()
			for c, v := range charts {
				emu.SetChart(c, v)
			}
			url := emu.StartTest(t)
			e := newEnv(t)
			e.vars["YOUTUBE_API_KEY"] = "k"
			if tc.backend == "redis" {
				// Eight processes at once on a loaded CI machine can stall
				// a reply past the 300 ms default read timeout; go-redis
				// then retries the script, which charges twice (a known
				// over-count, the safe side) and breaks the exact totals
				// this test checks.
				e.vars["TRENDFETCH_REDIS_URL"] = redistest.Start(t).URL() + "?read_timeout=5s&write_timeout=5s"
			}
			var global []string
			if tc.limit > 0 {
				global = []string{"--config", e.writeConfig(fmt.Sprintf("quota:\n  buckets:\n    - {name: units, limit: %d, window: 1h}\n  costs:\n    videos.list: {units: 1}\n", tc.limit))}
			}
			// One process first creates the database, as the first cron
			// tick on a new host would; then 8 start at once.
			if res := e.run(append(global, "quota", "status")...); res.code != 0 {
				t.Fatalf("quota status: exit %d\n%s", res.code, res.stderr)
			}
			procs := make([]*proc, len(codes))
			for i, c := range codes {
				procs[i] = e.spawn(append(global, "--api-endpoint", url, "run", "--region", c)...)
			}
			codesSeen := map[int]int{}
			for i, p := range procs {
				code := p.wait(t, 60*time.Second)
				codesSeen[code]++
				stderr := p.stderr.String()
				if strings.Contains(stderr, "database is locked") || strings.Contains(stderr, "SQLITE_BUSY") {
					t.Errorf("%s: database is locked:\n%s", codes[i], stderr)
				}
				assertNoPanic(t, stderr)
				if code != 0 && !(tc.limit > 0 && code == 75) {
					t.Errorf("%s: exit %d\n%s", codes[i], code, stderr)
				}
			}
			runs := checkStore(t, e.dbPath(), func(r string) int { return len(charts[r]) })
			if len(runs) != len(codes) {
				t.Fatalf("%d runs recorded, want %d", len(runs), len(codes))
			}
			var admitted int64
			outcomes := map[store.Outcome]int{}
			for _, r := range runs {
				admitted += r.Units["units"]
				outcomes[r.Outcome]++
				if r.Outcome == store.OutcomeSuccess && r.Videos != len(charts[r.Region]) {
					t.Errorf("%s: %d videos stored, want %d", r.Region, r.Videos, len(charts[r.Region]))
				}
			}
			used := bucketUsed(quotaStatus(t, e, global...), "units")
			t.Logf("exit codes %v, outcomes %v, limiter used %d, runs admitted %d, emulator charged %d, demand %d",
				codesSeen, outcomes, used, admitted, emu.Units("k"), demand)
			if used != emu.Units("k") || admitted != used {
				t.Errorf("limiter used %d, runs admitted %d, emulator charged %d: want all equal", used, admitted, emu.Units("k"))
			}
			switch {
			case tc.limit == 0 && (used != demand || outcomes[store.OutcomeSuccess] != len(codes)):
				t.Errorf("want %d successes spending %d units", len(codes), demand)
			case tc.limit > 0 && (used != tc.limit || codesSeen[75] == 0 || outcomes[store.OutcomeDenied] != codesSeen[75]):
				t.Errorf("limit %d: used %d, %d exits 75, %d runs denied; want exactly the limit used and every exit 75 recorded denied", tc.limit, used, codesSeen[75], outcomes[store.OutcomeDenied])
			}
		})
	}
}

// delayProxy forwards TCP connections to target, delaying every chunk of
// bytes in either direction by delay: a Redis that answers slowly.
func delayProxy(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				time.Sleep(delay)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, true)
			conns.Store(u, true)
			wg.Add(2)
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return "redis://" + ln.Addr().String() + "/0"
}

// TestRedisFaultsDuringRuns: Redis killed in the middle of a run, restarted,
// SCRIPT FLUSHed between runs, frozen, and answering slowly through a
// delaying proxy. Fail-open call sites keep running unmetered, fail-closed
// ones stop with exit 75, nothing hangs beyond the configured timeouts
// (every command is bounded by 10 s as a hang guard) and nothing panics.
func TestRedisFaultsDuringRuns(t *testing.T) {
	const bound = 10 * time.Second
	emu := youtubetest.New()
	emu.SetChart("US", usChart(t))
	url := emu.StartTest(t)
	srv := redistest.Start(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	e.vars["TRENDFETCH_REDIS_URL"] = srv.URL()
	closed := e.writeConfig("quota:\n  policies:\n    videos.list: fail-closed\n")
	run := func(t *testing.T, extra ...string) result {
		t.Helper()
		res := e.runBounded(bound, append(extra, "--api-endpoint", url, "run", "--region", "US")...)
		assertNoPanic(t, res.stderr)
		return res
	}
	newest := func(t *testing.T) store.Run {
		t.Helper()
		return checkStore(t, e.dbPath(), fixed(200))[0]
	}
	killAtPage := func(page string) {
		var once sync.Once
		emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Query().Get("pageToken") == page {
				once.Do(srv.Kill)
			}
			return false
		})
	}

	t.Run("killed mid-run, fail-open", func(t *testing.T) {
		killAtPage("CDIQAA") // page 2
		defer emu.SetHook(nil)
		res := run(t)
		r := newest(t)
		if res.code != 0 || !strings.Contains(res.stderr, "quota backend unavailable") {
			t.Fatalf("exit %d, want 0 with a warning\n%s", res.code, res.stderr)
		}
		if r.Outcome != store.OutcomeSuccessUnmetered || r.Videos != 200 || r.Unmetered != 2 || r.Units["units"] != 2 {
			t.Errorf("run %+v: want success, pages 1-2 metered, 3-4 unmetered", r)
		}
	})
	t.Run("restarted", func(t *testing.T) {
		srv.Restart()
		res := run(t)
		r := newest(t)
		if res.code != 0 || r.Unmetered != 0 || r.Units["units"] != 4 {
			t.Errorf("exit %d, run %+v: want a metered success\n%s", res.code, r, res.stderr)
		}
	})
	t.Run("killed mid-run, fail-closed", func(t *testing.T) {
		killAtPage("CGQQAA") // page 3
		defer emu.SetHook(nil)
		res := run(t, "--config", closed)
		r := newest(t)
		if res.code != 75 || r.Outcome != store.OutcomeDenied || !strings.Contains(r.Reason, "limiter unavailable") || r.Videos != 150 {
			t.Errorf("exit %d, run %+v: want 75, denied as limiter unavailable after 3 stored pages (page 3 was reserved before Redis died)\n%s", res.code, r, res.stderr)
		}
		srv.Restart()
	})
	t.Run("SCRIPT FLUSH between runs", func(t *testing.T) {
		if res := run(t); res.code != 0 {
			t.Fatalf("exit %d\n%s", res.code, res.stderr)
		}
		before := bucketUsed(quotaStatus(t, e), "units")
		srv.Do("SCRIPT", "FLUSH")
		res := run(t, "--config", closed) // fail-closed: a NOSCRIPT that is not recovered would stop it
		r := newest(t)
		after := bucketUsed(quotaStatus(t, e), "units")
		if res.code != 0 || r.Unmetered != 0 || after-before != 4 {
			t.Errorf("exit %d, run %+v, used %d -> %d: want a metered success counting 4 units\n%s", res.code, r, before, after, res.stderr)
		}
	})
	t.Run("frozen", func(t *testing.T) {
		srv.Freeze()
		defer srv.Thaw()
		res := run(t)
		r := newest(t)
		if res.code != 0 || r.Unmetered != 4 {
			t.Errorf("fail-open with Redis frozen: exit %d, run %+v; want 0 with 4 unmetered calls\n%s", res.code, r, res.stderr)
		}
		res = run(t, "--config", closed)
		if res.code != 75 {
			t.Errorf("fail-closed with Redis frozen: exit %d, want 75\n%s", res.code, res.stderr)
		}
		p := e.spawn("quota", "status")
		if code := p.wait(t, bound); code != 1 {
			t.Errorf("quota status with Redis frozen: exit %d, want 1\n%s", code, p.stderr.String())
		}
	})
	for _, tc := range []struct {
		name      string
		delay     time.Duration
		unmetered int
	}{
		{"slow within the timeout", 30 * time.Millisecond, 0},
		{"slower than the timeout", 500 * time.Millisecond, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := *e
			pe.vars = map[string]string{}
			for k, v := range e.vars {
				pe.vars[k] = v
			}
			pe.vars["TRENDFETCH_REDIS_URL"] = delayProxy(t, srv.Addr, tc.delay)
			start := time.Now()
			res := pe.runBounded(bound, "--api-endpoint", url, "run", "--region", "US")
			assertNoPanic(t, res.stderr)
			r := newest(t)
			t.Logf("run took %s", time.Since(start).Round(time.Millisecond))
			if res.code != 0 || r.Unmetered != tc.unmetered || r.Videos != 200 {
				t.Errorf("exit %d, run %+v: want success with %d unmetered calls\n%s", res.code, r, tc.unmetered, res.stderr)
			}
			res = pe.runBounded(bound, "--config", closed, "--api-endpoint", url, "run", "--region", "US")
			assertNoPanic(t, res.stderr)
			if want := map[bool]int{true: 0, false: 75}[tc.unmetered == 0]; res.code != want {
				t.Errorf("fail-closed: exit %d, want %d\n%s", res.code, want, res.stderr)
			}
		})
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted at
// cleanup. It skips the test when mounting is not permitted (not root, or
// no CAP_SYS_ADMIN in this container).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a tmpfs in CI (CI runs as root): %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file into dir until the filesystem is full, then frees
// leave bytes.
func fill(t *testing.T, dir string, leave int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	if err := f.Truncate(max(0, n-leave)); err != nil {
		t.Fatal(err)
	}
}

// assertKept checks that the first run's data is intact: the integrity
// checks pass, its run is a success with the whole chart, and a title of it
// is found.
func assertKept(t *testing.T, e *env, db string, chart []*youtube.Video) {
	t.Helper()
	runs := checkStore(t, db, fixed(len(chart)))
	if len(runs) == 0 || runs[len(runs)-1].Outcome != store.OutcomeSuccess || runs[len(runs)-1].Videos != len(chart) {
		t.Fatalf("first run not kept: %+v", runs)
	}
	res := e.run("--database", db, "search", "--json", "--region", "US", chart[7].Snippet.Title)
	var hits []struct {
		VideoID string `json:"video_id"`
	}
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &hits) != nil || len(hits) == 0 || hits[0].VideoID != chart[7].Id {
		t.Errorf("stored video not found after the fault: exit %d %s%s", res.code, res.stdout, res.stderr)
	}
}

// TestDiskFullAndReadOnlyDatabase: a run on a full filesystem or a read-only
// database fails with one clear error line and exit 1, and what an earlier
// run stored is still there and searchable.
func TestDiskFullAndReadOnlyDatabase(t *testing.T) {
	chart := usChart(t)
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	emu.SetChart("GB", youtubetest.Sample())
	url := emu.StartTest(t)
	root := os.Geteuid() == 0

	setup := func(t *testing.T, dir string) (*env, string) {
		e := newEnv(t)
		e.vars["YOUTUBE_API_KEY"] = "k"
		db := filepath.Join(dir, "tf.db")
		if res := e.runBounded(30*time.Second, "--database", db, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
			t.Fatalf("first run: exit %d\n%s", res.code, res.stderr)
		}
		return e, db
	}
	assertFails := func(t *testing.T, res result, want ...string) {
		t.Helper()
		assertNoPanic(t, res.stderr)
		line := lastLine(res.stderr)
		ok := false
		for _, w := range want {
			ok = ok || strings.Contains(line, w)
		}
		if res.code != 1 || !strings.HasPrefix(line, "trendfetch: ") || !ok {
			t.Errorf("exit %d, last line %q: want exit 1 and a one-line error saying one of %q\n%s", res.code, line, want, res.stderr)
		}
	}

	for _, leave := range []int64{0, 96 << 10} {
		t.Run(fmt.Sprintf("disk full, %d KiB left", leave>>10), func(t *testing.T) {
			if !root {
				t.Skip("filling a filesystem needs a tmpfs mount (root)")
			}
			dir := mountTmpfs(t, 8<<20)
			e, db := setup(t, dir)
			fill(t, dir, leave)
			cfg := e.writeConfig("runs:\n  lease_ttl: 1h\n")
			res := e.runBounded(30*time.Second, "--config", cfg, "--database", db, "--api-endpoint", url, "run", "--region", "GB")
			assertFails(t, res, "disk is full", "is full: ")
			os.Remove(filepath.Join(dir, "filler"))
			assertKept(t, e, db, chart)
			// With space again, the next run works at once: the failed run's
			// lease, which it could not release on a full disk, names a
			// process of this host that is gone, and is taken over.
			res = e.runBounded(30*time.Second, "--config", cfg, "--database", db, "--api-endpoint", url, "run", "--region", "GB")
			if res.code != 0 {
				t.Errorf("run after freeing space: exit %d\n%s", res.code, res.stderr)
			}
		})
	}

	t.Run("read-only", func(t *testing.T) {
		var (
			dir     string
			restore func()
		)
		if root {
			// Root ignores file modes: make the whole filesystem read-only.
			dir = mountTmpfs(t, 8<<20)
			restore = func() {
				if out, err := exec.Command("mount", "-o", "remount,rw", dir).CombinedOutput(); err != nil {
					t.Fatalf("remount rw: %v %s", err, out)
				}
			}
		} else {
			dir = t.TempDir()
		}
		e, db := setup(t, dir)
		if root {
			if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
				t.Fatalf("remount ro: %v %s", err, out)
			}
		} else {
			for _, p := range []string{db, filepath.Join(dir, "quota.db")} {
				os.Chmod(p, 0o444)
			}
			os.Chmod(dir, 0o555)
			restore = func() {
				os.Chmod(dir, 0o755)
				os.Chmod(db, 0o644)
				os.Chmod(filepath.Join(dir, "quota.db"), 0o644)
			}
		}
		t.Cleanup(restore)
		res := e.runBounded(30*time.Second, "--database", db, "--api-endpoint", url, "run", "--region", "GB")
		assertFails(t, res, "read-only", "readonly", "unable to open", "permission denied")
		// Reading a WAL database needs its -shm file, which cannot be
		// created here. On read-only media (root's case) no writer can
		// come, so the read commands open it as immutable and answer; in a
		// directory this user cannot write, a writer may come, so they
		// refuse with one line saying what they need.
		res = e.run("--database", db, "runs")
		if root && (res.code != 0 || !strings.Contains(res.stdout, "success")) ||
			!root && (res.code != 2 || !strings.Contains(res.stderr, "writable")) {
			t.Errorf("runs on a read-only database: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		res = e.run("--database", db, "search", "sample")
		if root && (res.code != 0 || !strings.Contains(res.stdout, "1. ")) ||
			!root && (res.code != 2 || !strings.Contains(res.stderr, "writable")) {
			t.Errorf("search on a read-only database: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		res = e.run("--database", db, "quota", "status")
		if res.code != 0 || !strings.Contains(res.stdout, "units") {
			t.Errorf("quota status on a read-only quota database: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		res = e.run("--database", db, "lease", "list")
		if res.code != 0 || !strings.Contains(res.stdout, "no region leases held") {
			t.Errorf("lease list on a read-only quota database: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		restore()
		assertKept(t, e, db, chart)
	})

	t.Run("database directory is a file", func(t *testing.T) {
		e := newEnv(t)
		e.vars["YOUTUBE_API_KEY"] = "k"
		blocker := filepath.Join(e.dir, "blocker")
		if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		calls := emu.TotalCalls()
		res := e.runBounded(30*time.Second, "--database", filepath.Join(blocker, "tf.db"), "--api-endpoint", url, "run", "--region", "US")
		assertFails(t, res, "not a directory")
		if emu.TotalCalls() != calls {
			t.Error("an API call was made without a database to store it")
		}
	})
}

// TestBadCLIInput: every malformed invocation exits 2 with one line on
// stderr (plus at most a Try: hint), no output and no API call. Region
// lists in lower case or with duplicates are accepted and normalized.
func TestBadCLIInput(t *testing.T) {
	emu, url, e := sampleEnv(t, "US", "GB")
	dirConfig := filepath.Join(e.dir, "confdir")
	os.Mkdir(dirConfig, 0o700)
	fifo := filepath.Join(e.dir, "fifo.yaml")
	haveFifo := syscall.Mkfifo(fifo, 0o600) == nil
	for _, tc := range []struct {
		name   string
		config string // written to a file passed with --config
		args   []string
		want   string
		hint   string // in the Try: line, when set
	}{
		{name: "bad duration", config: "api:\n  timeout: 30 seconds\n", args: []string{"run", "--region", "US"}, want: `api.timeout: want a duration such as 90s, 30m or 24h (got "30 seconds")`},
		{name: "negative duration", config: "api:\n  timeout: -5s\n", args: []string{"run", "--region", "US"}, want: "api.timeout = -5s: must be > 0"},
		{name: "bucket window not a duration", config: "quota:\n  buckets:\n    - {name: units, limit: 5, window: 1day}\n  costs:\n    videos.list: {units: 1}\n", args: []string{"quota", "status"}, want: `quota.buckets[0].window: want a duration such as 90s, 30m or 24h (got "1day")`},
		{name: "lease ttl too short", config: "runs:\n  lease_ttl: 10ms\n", args: []string{"run", "--region", "US"}, want: "runs.lease_ttl = 10ms"},
		{name: "not YAML", config: "api: [unclosed\n", args: []string{"run", "--region", "US"}, want: "not valid YAML"},
		{name: "YAML but not a mapping", config: "- just\n- a list\n", args: []string{"run", "--region", "US"}, want: "config"},
		{name: "binary garbage", config: "\x00\x01\x02\xff\xfe", args: []string{"run", "--region", "US"}, want: "config"},
		{name: "config is a directory", args: []string{"--config", dirConfig, "run", "--region", "US"}, want: "is a directory"},
		{name: "config missing", args: []string{"--config", filepath.Join(e.dir, "nope.yaml"), "run", "--region", "US"}, want: "no such file"},
		{name: "config unreadable (FIFO)", args: []string{"--config", fifo, "run", "--region", "US"}, want: "not a regular file"},
		{name: "empty query", args: []string{"search", ""}, want: "empty"},
		{name: "blank query", args: []string{"search", "   "}, want: "empty"},
		{name: "no query", args: []string{"search"}, want: "arg"},
		{name: "search limit -1", args: []string{"search", "x", "--limit", "-1"}, want: "--limit -1"},
		{name: "runs limit -1", args: []string{"runs", "--limit", "-1"}, want: "--limit -1"},
		{name: "runs limit not a number", args: []string{"runs", "--limit", "ten"}, want: `--limit "ten": want a whole number`},
		{name: "unknown config key", config: "databse: x\n", args: []string{"runs"}, want: `unknown key databse: did you mean "database"?`},
		{name: "unknown nested config key", config: "schedule:\n  evry: 1h\n", args: []string{"runs"}, want: `line 2: unknown key schedule.evry: did you mean "every"?`},
		{name: "unknown call site in costs", config: "quota:\n  costs:\n    search.lst: {search: 1}\n    videos.list: {units: 1}\n", args: []string{"run", "--region", "US"}, want: "quota.costs.search.lst"},
		{name: "enabled call site without cost", config: "categories: {enabled: true}\nquota:\n  costs:\n    videos.list: {units: 1}\n", args: []string{"run", "--region", "US"}, want: "videoCategories.list has no cost"},
		{name: "charge unknown method", args: []string{"quota", "charge", "--method", "video.list"}, want: `--method "video.list"`, hint: "videos.list"},
		{name: "region as argument", args: []string{"run", "US"}, want: "--region US", hint: "trendfetch run --region US"},
		{name: "key file FIFO", config: "credentials:\n  - {name: p, api_key_env: NONE, api_key_file: FIFO}\ncredential: p\n", args: []string{"run", "--region", "US"}, want: "credentials[p].api_key_file"},
		{name: "key file /dev/zero", config: "credentials:\n  - {name: p, api_key_env: NONE, api_key_file: /dev/zero}\ncredential: p\n", args: []string{"run", "--region", "US"}, want: "not a regular file"},
		{name: "key file too large", config: "credentials:\n  - {name: p, api_key_env: NONE, api_key_file: BIGKEY}\ncredential: p\n", args: []string{"run", "--region", "US"}, want: "a secret file holds one line"},
		{name: "schedule: another credential's key unreadable", config: "credentials:\n  - {name: default}\n  - {name: b, api_key_env: NONE, api_key_file: FIFO}\n", args: []string{"schedule"}, want: "credentials[b].api_key_file"},
		{name: "metrics port out of range", args: []string{"schedule", "--metrics-addr", "0.0.0.0:99999"}, want: `port "99999"`},
		{name: "config too large", config: "BIG", args: []string{"runs"}, want: "larger than 1024 KiB"},
		{name: "no HOME nor XDG", args: []string{"run", "--region", "US"}, want: "set database"},
		{name: "region bogus in list", args: []string{"run", "--region", "us,zz"}, want: `unsupported region "zz"`},
		{name: "empty region", args: []string{"run", "--region", ""}, want: "region"},
		{name: "unknown flag", args: []string{"runs", "--json-pretty"}, want: "unknown flag"},
		{name: "unknown command", args: []string{"rnu"}, want: "unknown command"},
		{name: "region and all", args: []string{"run", "--region", "US", "--all"}, want: "exclude each other"},
		{name: "TRENDFETCH_REGIONS bad", args: []string{"run", "--all"}, want: "XX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "FIFO") && !haveFifo {
				t.Skip("cannot create a FIFO here")
			}
			te := *e
			te.t = t
			te.vars = map[string]string{}
			for k, v := range e.vars {
				te.vars[k] = v
			}
			if strings.HasPrefix(tc.name, "TRENDFETCH_REGIONS") {
				te.vars["TRENDFETCH_REGIONS"] = "US,XX"
			}
			if strings.HasPrefix(tc.name, "no HOME") {
				delete(te.vars, "HOME")
				delete(te.vars, "XDG_DATA_HOME")
				delete(te.vars, "XDG_CONFIG_HOME")
			}
			switch {
			case tc.config == "BIG":
				tc.config = "regions: [US]\n" + strings.Repeat("# padding padding padding padding\n", 40000)
			case strings.Contains(tc.config, "FIFO"):
				if !haveFifo {
					t.Skip("cannot create a FIFO here")
				}
				tc.config = strings.ReplaceAll(tc.config, "FIFO", fifo)
			case strings.Contains(tc.config, "BIGKEY"):
				big := filepath.Join(e.dir, "bigkey")
				if err := os.WriteFile(big, bytes.Repeat([]byte("k"), 1<<20), 0o600); err != nil {
					t.Fatal(err)
				}
				tc.config = strings.ReplaceAll(tc.config, "BIGKEY", big)
			}
			args := append([]string{"--api-endpoint", url}, tc.args...)
			if tc.config != "" {
				args = append([]string{"--config", te.writeConfig(tc.config)}, args...)
			}
			calls := emu.TotalCalls()
			res := te.runBounded(10*time.Second, args...)
			if res.code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if !strings.HasPrefix(lines[0], "trendfetch: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr first line %q, want it to contain %q", lines[0], tc.want)
			}
			if tc.hint != "" && (len(lines) < 2 || !strings.Contains(lines[1], tc.hint)) {
				t.Errorf("want a Try: line with %q, got:\n%s", tc.hint, res.stderr)
			}
			if len(lines) > 2 || (len(lines) == 2 && !strings.HasPrefix(lines[1], "Try: ")) {
				t.Errorf("want a one-line error (plus at most a Try: hint), got:\n%s", res.stderr)
			}
			if emu.TotalCalls() != calls {
				t.Error("an API call was made")
			}
		})
	}

	// Lower case and duplicates are normalized, not refused: one run per
	// distinct region, in the order first given.
	for _, args := range [][]string{
		{"run", "--region", "us,gb,US", "--region", "Gb"},
	} {
		res := e.runBounded(30*time.Second, append([]string{"--api-endpoint", url}, args...)...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, res.code, res.stderr)
		}
	}
	cfg := e.writeConfig("regions: [gb, us, GB, Us]\n")
	if res := e.runBounded(30*time.Second, "--config", cfg, "--api-endpoint", url, "run", "--all"); res.code != 0 {
		t.Fatalf("run --all with regions [gb, us, GB, Us]: exit %d\n%s", res.code, res.stderr)
	}
	runs := checkStore(t, e.dbPath(), fixed(youtubetest.SampleSize))
	var got []string
	for i := len(runs) - 1; i >= 0; i-- {
		got = append(got, runs[i].Region)
	}
	if strings.Join(got, ",") != "US,GB,GB,US" {
		t.Errorf("regions run: %v, want US,GB then GB,US (normalized, each once per invocation)", got)
	}
}
