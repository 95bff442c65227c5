package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/robfig/cron/v3"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// lockedBuffer collects a child process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// logLines parses the JSON log lines of s.
func logLines(s string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// daemon is a running `trendfetch schedule`.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	code   int
}

func (e *env) start(args ...string) *daemon {
	e.t.Helper()
	return e.startWith(nil, args...)
}

// startWith is start with the process attributes attr (nil: none).
func (e *env) startWith(attr *syscall.SysProcAttr, args ...string) *daemon {
	e.t.Helper()
	d := &daemon{t: e.t, cmd: exec.Command(binary, args...), stderr: &lockedBuffer{}, done: make(chan struct{})}
	for k, v := range e.vars {
		d.cmd.Env = append(d.cmd.Env, k+"="+v)
	}
	d.cmd.Stderr = d.stderr
	d.cmd.SysProcAttr = attr
	if err := d.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		d.cmd.Wait()
		d.code = d.cmd.ProcessState.ExitCode()
		close(d.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// waitFor polls cond until it holds; the deadline only bounds a hang (it
// is no timing assertion) and the failure shows the daemon's log.
func (d *daemon) waitFor(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		select {
		case <-d.done:
			d.t.Fatalf("trendfetch schedule exited (%d) while waiting for %s; stderr:\n%s", d.code, what, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("gave up waiting for %s; stderr:\n%s", what, d.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends sig and returns the exit code.
func (d *daemon) stop(sig syscall.Signal) int {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(90 * time.Second):
		d.t.Fatalf("no exit after %s; stderr:\n%s", sig, d.stderr.String())
	}
	return d.code
}

// metricsAddr waits for the "serving /metrics" log line and returns its address.
func (d *daemon) metricsAddr() string { return d.listenAddr("the metrics listener", "/metrics") }

// listenAddr waits for a log line with an addr whose message contains
// marker, and returns the address.
func (d *daemon) listenAddr(what, marker string) string {
	d.t.Helper()
	var addr string
	d.waitFor(what, func() bool {
		for _, l := range logLines(d.stderr.String()) {
			if a, ok := l["addr"].(string); ok && strings.Contains(l["message"].(string), marker) {
				addr = a
				return true
			}
		}
		return false
	})
	return addr
}

// storedRuns reads the runs read-only while the daemon writes; nil while
// the database does not exist yet.
func storedRuns(t *testing.T, path string) []store.Run {
	t.Helper()
	st, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		return nil
	}
	defer st.Close()
	runs, err := st.Runs(context.Background(), 0)
	if err != nil {
		return nil
	}
	return runs
}

func countRuns(runs []store.Run, region string, outcomes ...store.Outcome) int {
	n := 0
	for _, r := range runs {
		if r.Region != region {
			continue
		}
		for _, o := range outcomes {
			if r.Outcome == o {
				n++
			}
		}
	}
	return n
}

func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return mf
}

// metricValue returns the counter or gauge of family name whose labels are
// exactly want (missing: -1).
func metricValue(mf map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	for _, m := range mf[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && want[l.GetName()] == l.GetValue()
		}
		if !match {
			continue
		}
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	return -1
}

// assertNoOverlap fails when two runs overlap in time; with concurrency 1
// this holds across regions, and it must always hold within one region.
func assertNoOverlap(t *testing.T, runs []store.Run) {
	t.Helper()
	sorted := append([]store.Run(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].StartedAt.Before(sorted[j].StartedAt) })
	for i, r := range sorted {
		if r.FinishedAt.IsZero() || r.Outcome == store.OutcomeRunning {
			t.Errorf("run %d (%s) never finished: %+v", r.ID, r.Region, r)
			continue
		}
		if i > 0 && r.StartedAt.Before(sorted[i-1].FinishedAt) {
			p := sorted[i-1]
			t.Errorf("runs overlap: %d %s [%s, %s] and %d %s [%s, %s]", p.ID, p.Region, p.StartedAt.Format(time.StampMicro), p.FinishedAt.Format(time.StampMicro),
				r.ID, r.Region, r.StartedAt.Format(time.StampMicro), r.FinishedAt.Format(time.StampMicro))
		}
	}
}

func TestScheduleRunsRegionsServesMetricsAndStopsCleanly(t *testing.T) {
	emu, url, e := sampleEnv(t, "US", "GB")
	e.vars["TZ"] = "America/New_York" // log times must be UTC whatever the local zone
	cfg := e.writeConfig(`
regions: [US, GB]
schedule:
  every: 1s
  stagger: 500ms
  concurrency: 1
  grace: 1s
`)
	d := e.start("--config", cfg, "--api-endpoint", url, "schedule", "--metrics-addr", "127.0.0.1:0")
	addr := d.metricsAddr()

	// At least two complete runs per region.
	d.waitFor("two successful runs per region", func() bool {
		runs := storedRuns(t, e.dbPath())
		return countRuns(runs, "US", store.OutcomeSuccess) >= 2 && countRuns(runs, "GB", store.OutcomeSuccess) >= 2
	})

	// Freeze the scheduler mid-job: the next API request hangs until the
	// client gives up. With concurrency 1 nothing else can reserve quota
	// meanwhile, so the limiter, the store and /metrics hold still.
	entered := make(chan struct{})
	var once sync.Once
	emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		once.Do(func() { close(entered) })
		<-r.Context().Done()
		return true
	})
	d.waitFor("a request in flight", func() bool {
		select {
		case <-entered:
			return true
		default:
			return false
		}
	})

	mf := scrapeMetrics(t, addr)
	runs := storedRuns(t, e.dbPath())
	var inFlight []store.Run
	finishedUnits := map[string]int64{}
	for _, r := range runs {
		if r.Outcome == store.OutcomeRunning {
			inFlight = append(inFlight, r)
			continue
		}
		for b, u := range r.Units {
			finishedUnits[b] += u
		}
	}
	if len(inFlight) != 1 {
		t.Fatalf("%d runs in flight, want 1: %+v", len(inFlight), inFlight)
	}
	busy := inFlight[0].Region

	// Quota figures equal the limiter's own Status (read here from the
	// same embedded backend).
	buckets, costs, err := config.Default().Limits()
	if err != nil {
		t.Fatal(err)
	}
	backend, err := quota.NewSQLite(filepath.Join(filepath.Dir(e.dbPath()), "quota.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := quota.New(backend, buckets, costs)
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	st := lim.Status(context.Background(), "default")
	if !st.Reachable {
		t.Fatalf("limiter status: %v", st.Err)
	}
	for _, b := range st.Buckets {
		l := map[string]string{"credential": "default", "bucket": b.Name}
		if got := metricValue(mf, "trendfetch_quota_used_units", l); got != float64(b.Used) {
			t.Errorf("metrics quota used %v = %v, Limiter.Status says %d", l, got, b.Used)
		}
		if got := metricValue(mf, "trendfetch_quota_remaining_units", l); got != float64(b.Remaining) {
			t.Errorf("metrics quota remaining %v = %v, Limiter.Status says %d", l, got, b.Remaining)
		}
		if got := metricValue(mf, "trendfetch_quota_limit_units", l); got != float64(b.Limit) {
			t.Errorf("metrics quota limit %v = %v, Limiter.Status says %d", l, got, b.Limit)
		}
	}
	// Every finished run spent 2 units (60 sample videos, 2 pages); the run
	// in flight has reserved its page too.
	if used := st.Buckets[0].Used; used != finishedUnits["units"]+1 || used < 8 {
		t.Errorf("units used %d, want the finished runs' %d + 1 in flight", used, finishedUnits["units"])
	}
	if got := metricValue(mf, "trendfetch_units_spent_total", map[string]string{"credential": "default", "bucket": "units"}); got != float64(finishedUnits["units"]) {
		t.Errorf("units_spent_total = %v, finished runs recorded %d", got, finishedUnits["units"])
	}
	for _, region := range []string{"US", "GB"} {
		for _, o := range []store.Outcome{store.OutcomeSuccess, store.OutcomeDenied, store.OutcomeFailed} {
			want := countRuns(runs, region, o)
			if got := metricValue(mf, "trendfetch_runs_total", map[string]string{"region": region, "outcome": string(o)}); got != float64(want) {
				t.Errorf("runs_total{%s,%s} = %v, the store has %d", region, o, got, want)
			}
		}
		if ts := metricValue(mf, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": region}); ts <= 0 {
			t.Errorf("last success of %s = %v", region, ts)
		}
	}
	if got := metricValue(mf, "trendfetch_api_calls_total", map[string]string{"method": "videos.list", "status": "200"}); got != float64(finishedUnits["units"]) {
		t.Errorf("api_calls_total{videos.list,200} = %v, want %d (one per finished page)", got, finishedUnits["units"])
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	}

	// SIGTERM mid-job: the job gets its grace period, is cancelled, and
	// the process exits 0.
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; stderr:\n%s", code, d.stderr.String())
	}
	runs = storedRuns(t, e.dbPath())
	assertNoOverlap(t, runs)
	for _, region := range []string{"US", "GB"} {
		var byRegion []store.Run
		for _, r := range runs {
			if r.Region == region {
				byRegion = append(byRegion, r)
			}
		}
		assertNoOverlap(t, byRegion)
	}
	var last store.Run
	for _, r := range runs { // newest first
		if r.Region == busy {
			last = r
			break
		}
	}
	if last.ID != inFlight[0].ID || (last.Outcome != store.OutcomeInterrupted && last.Outcome != store.OutcomeSuccess) {
		t.Errorf("last run of %s = %+v, want run %d recorded interrupted or success", busy, last, inFlight[0].ID)
	}

	logs := logLines(d.stderr.String())
	scheduled := map[string]bool{}
	stopping := false
	for _, l := range logs {
		if l["message"] == "scheduled" && l["next_run"] != nil {
			scheduled[l["region"].(string)] = true
		}
		stopping = stopping || l["message"] == "stopping: no new runs; waiting for running ones"
		// JSON conventions (issue 12): durations carry their unit, times are UTC.
		for k, v := range l {
			if k == "grace" || k == "retry_after" || k == "timeout" {
				t.Errorf("log field %q = %v has no unit: want %s_ms", k, v, k)
			}
			if ts, ok := v.(string); ok && (strings.HasPrefix(ts, "0001-01-01") || (k == "time" || k == "next_run") && !strings.HasSuffix(ts, "Z")) {
				t.Errorf("log field %q = %q: want an RFC 3339 UTC time, or no field", k, ts)
			}
		}
	}
	if !scheduled["US"] || !scheduled["GB"] || !stopping {
		t.Errorf("log lacks the next run per region (%v) or the stop notice (%v):\n%s", scheduled, stopping, d.stderr.String())
	}
}

func TestScheduleQuotaDenialEndsTheJobNotTheScheduler(t *testing.T) {
	emu, url, e := sampleEnv(t, "US")
	cfg := e.writeConfig(`
regions: [US]
schedule:
  every: 1s
quota:
  buckets:
    - {name: units, limit: 3, window: 1h}
  costs:
    videos.list: {units: 1}
`)
	d := e.start("--config", cfg, "--api-endpoint", url, "schedule")
	// Run 1 succeeds (2 pages), run 2 is denied at its second page, later
	// runs are denied before any call: the region keeps running each tick.
	d.waitFor("three denied runs", func() bool {
		return countRuns(storedRuns(t, e.dbPath()), "US", store.OutcomeDenied) >= 3
	})
	if code := d.stop(syscall.SIGINT); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0; stderr:\n%s", code, d.stderr.String())
	}
	if n := emu.Calls("videos.list"); n != 3 {
		t.Errorf("emulator saw %d videos.list calls, want exactly 3 (the bucket's limit)", n)
	}
	runs := storedRuns(t, e.dbPath())
	assertNoOverlap(t, runs)
	denied := countRuns(runs, "US", store.OutcomeDenied)
	if countRuns(runs, "US", store.OutcomeSuccess) != 1 || countRuns(runs, "US", store.OutcomeFailed) != 0 {
		t.Errorf("runs: %+v", runs)
	}
	// One warning per denied run, no error storm.
	warns, errs := 0, 0
	for _, l := range logLines(d.stderr.String()) {
		switch l["level"] {
		case "warn":
			if l["message"] == "run finished" {
				warns++
			}
		case "error":
			errs++
		}
	}
	if warns != denied || errs != 0 {
		t.Errorf("%d denial warnings and %d errors for %d denied runs; stderr:\n%s", warns, errs, denied, d.stderr.String())
	}
}

func TestScheduleBadConfigExits2BeforeIO(t *testing.T) {
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	cfg := e.writeConfig("regions: [US, GB, JP]\nschedule:\n  every: 10m\n  stagger: 5m\n")
	res := e.run("--config", cfg, "schedule")
	if res.code != 2 || !strings.Contains(res.stderr, "schedule.stagger = 5m0s") || !strings.Contains(res.stderr, "collide") {
		t.Errorf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
	res = e.run("schedule", "--metrics-addr", "no-port")
	if res.code != 2 || !strings.Contains(res.stderr, "--metrics-addr") {
		t.Errorf("bad --metrics-addr: exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

func TestCrontabLinesMatchTheScheduler(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig(`
regions: [us, gb, jp]
schedule:
  every: 2h
  stagger: 3m
  timezone: Europe/London
  log_dir: /var/log/tf
`)
	res := e.run("--config", cfg, "crontab")
	if res.code != 0 {
		t.Fatalf("crontab exit %d: %s", res.code, res.stderr)
	}
	if !strings.HasPrefix(res.stdout, "# BEGIN trendfetch\n# trendfetch: regions US GB JP") || !strings.Contains(res.stdout, "\nCRON_TZ=Europe/London\n") {
		t.Errorf("header:\n%s", res.stdout)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "CRON_TZ=") {
			continue
		}
		// The environment's settings without a flag come first on each line.
		f := slices.DeleteFunc(strings.Fields(l), func(w string) bool { return strings.HasPrefix(w, "TRENDFETCH_LOG_FORMAT=") })
		if len(f) < 6 {
			t.Fatalf("short line %q", l)
		}
		cmd := strings.Join(f[5:], " ")
		want := binary + " --config " + cfg + " --database " + e.dbPath() + " run --region "
		if !strings.HasPrefix(cmd, want) || !strings.HasSuffix(cmd, " 2>&1") {
			t.Errorf("command %q, want it to start with %q", cmd, want)
		}
		region := f[12]
		if !strings.Contains(cmd, ">>/var/log/tf/"+region+".log") {
			t.Errorf("line %q does not append to /var/log/tf/%s.log", l, region)
		}
		lines[region] = strings.Join(f[:5], " ")
	}
	if lines["US"] != "0 */2 * * *" || lines["GB"] != "3 */2 * * *" || lines["JP"] != "6 */2 * * *" {
		t.Errorf("crontab fields %v", lines)
	}

	// Each region's next run shown by `regions` is a tick of its crontab line.
	res = e.run("--config", cfg, "regions", "--json")
	if res.code != 0 {
		t.Fatalf("regions exit %d: %s", res.code, res.stderr)
	}
	var out []regionOut
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	configured := 0
	for _, r := range out {
		if !r.Configured {
			continue
		}
		configured++
		std, err := cron.ParseStandard("CRON_TZ=Europe/London " + lines[r.Code])
		if err != nil {
			t.Fatal(err)
		}
		if r.NextRun == nil || !std.Next(r.NextRun.Add(-time.Second)).Equal(*r.NextRun) {
			t.Errorf("%s: next run %v is not a tick of %q", r.Code, r.NextRun, lines[r.Code])
		}
	}
	if configured != 3 {
		t.Errorf("%d configured regions in `regions --json`", configured)
	}

	// An interval cron cannot express is a usage error.
	res = e.run("--config", cfg, "crontab", "--every", "7m", "--stagger", "1m")
	if res.code != 2 || !strings.Contains(res.stderr, "7m0s cannot be written as a crontab line") {
		t.Errorf("--every 7m: exit %d, stderr %s", res.code, res.stderr)
	}
	res = e.run("--config", cfg, "crontab", "--every", "1h", "--stagger", "10m")
	if res.code != 0 || !strings.Contains(res.stdout, "\n20 * * * *") {
		t.Errorf("--every 1h --stagger 10m: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestScheduleSeedsLastSuccessFromTheDatabase: after a restart the
// staleness gauge shows the last stored success, not 0 (which would fire
// the staleness alert of docs/operations.md on every deploy).
func TestScheduleSeedsLastSuccessFromTheDatabase(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	runs := storedRuns(t, e.dbPath())
	if len(runs) != 1 || runs[0].Outcome != store.OutcomeSuccess {
		t.Fatalf("runs: %+v", runs)
	}
	// No tick before the scrape: the next one is on 1 January.
	cfg := e.writeConfig("regions: [US]\nschedule:\n  cron: \"0 0 1 1 *\"\n")
	d := e.start("--config", cfg, "--api-endpoint", url, "schedule", "--metrics-addr", "127.0.0.1:0")
	mf := scrapeMetrics(t, d.metricsAddr())
	got := metricValue(mf, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"})
	if want := float64(runs[0].FinishedAt.UnixNano()) / 1e9; math.Abs(got-want) > 0.001 {
		t.Errorf("last success = %f after a restart, want the stored run's %f", got, want)
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// TestScheduleLogsSkippedTicksAndEndsAStuckRun: a region stuck on a hanging
// API holds the only run slot; every tick of the other region that waits or
// is skipped is logged with the region holding the slot, and runs.timeout
// ends the stuck run (recorded failed), freeing the slot.
func TestScheduleLogsSkippedTicksAndEndsAStuckRun(t *testing.T) {
	emu, url, e := sampleEnv(t, "US", "JP")
	emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("regionCode") != "JP" {
			return false
		}
		<-r.Context().Done() // an API that never answers JP
		return true
	})
	cfg := e.writeConfig("regions: [JP, US]\nschedule:\n  every: 1s\n  stagger: 0s\nruns:\n  timeout: 3s\napi:\n  retries: 0\n")
	d := e.start("--config", cfg, "--api-endpoint", url, "schedule")
	skipped := func() bool {
		for _, l := range logLines(d.stderr.String()) {
			held, _ := l["held_by"].([]any)
			if l["region"] == "US" && strings.HasPrefix(l["message"].(string), "tick skipped") && len(held) == 1 && held[0] == "JP" {
				return true
			}
		}
		return false
	}
	d.waitFor("a skipped US tick naming JP", skipped)
	d.waitFor("the stuck JP run ended by runs.timeout, then a US run", func() bool {
		runs := storedRuns(t, e.dbPath())
		return countRuns(runs, "JP", store.OutcomeFailed) >= 1 && countRuns(runs, "US", store.OutcomeSuccess) >= 1
	})
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", code, d.stderr.String())
	}
	for _, r := range storedRuns(t, e.dbPath()) {
		if r.Region == "JP" && r.Outcome == store.OutcomeFailed && !strings.Contains(r.Reason, "deadline") {
			t.Errorf("JP run failed with %q, want the deadline named", r.Reason)
		}
	}
}

// TestScheduleOnPostgres: `schedule` over a PostgreSQL dataset seeds the
// last success from it (a `run` before the restart) and stores its own
// ticks' runs there; SIGTERM ends it with exit 0.
func TestScheduleOnPostgres(t *testing.T) {
	_, db := pgDatabase(t)
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--database", db, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	first := storedRuns(t, db)
	if len(first) != 1 || first[0].Outcome != store.OutcomeSuccess {
		t.Fatalf("runs after run: %+v", first)
	}
	cfg := e.writeConfig("regions: [US]\nschedule:\n  every: 1s\n")
	d := e.start("--config", cfg, "--database", db, "--api-endpoint", url, "schedule", "--metrics-addr", "127.0.0.1:0")
	mf := scrapeMetrics(t, d.metricsAddr())
	got := metricValue(mf, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"})
	if want := float64(first[0].FinishedAt.UnixNano()) / 1e9; got < want-0.001 {
		t.Errorf("last success = %f at start, want at least the stored run's %f", got, want)
	}
	d.waitFor("two more successful runs in PostgreSQL", func() bool {
		return countRuns(storedRuns(t, db), "US", store.OutcomeSuccess) >= 3
	})
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
	if _, err := os.Stat(e.dbPath()); err == nil {
		t.Errorf("a SQLite file %s was written beside a PostgreSQL dataset", e.dbPath())
	}
}

// TestScheduleChecksEveryKeyFirst: a credential whose key cannot be read
// stops schedule before it listens or runs anything (exit 2), not at a first
// tick hours later.
func TestScheduleChecksEveryKeyFirst(t *testing.T) {
	p := newInproc(t, "regions: [US]\ncredentials:\n  - name: default\n    api_key_env: TF_TEST_MISSING_KEY\n", nil)
	o := &scheduleOptions{engine: p.engine(), cfg: p.a.cfg, lookupEnv: p.a.lookupEnv, metricsAddr: "127.0.0.1:0"}
	err := scheduleRun(context.Background(), o)
	if exit(err) != 2 || !strings.Contains(err.Error(), "TF_TEST_MISSING_KEY") {
		t.Errorf("schedule without its key: %v (exit %d), want exit 2 naming the variable", err, exit(err))
	}
}
