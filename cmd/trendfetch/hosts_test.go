package main

// Several hosts, one dataset (issue 30 items 3 and 7, docs/design.md §10a):
// processes with host identities of their own (unshare(1) UTS namespaces,
// each with its host name) sharing one Redis and one dataset.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// requireHosts skips t, or fails it under CI=true (CI runs as root), when
// this process cannot give a child a host name of its own (unshare --uts
// needs root).
func requireHosts(t *testing.T) {
	t.Helper()
	out, err := exec.Command("unshare", "--uts", "--", "sh", "-c", "hostname tf-probe && hostname").CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) == "tf-probe" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("unshare --uts (util-linux, as root) is required in CI: %v: %s", err, out)
	}
	t.Skipf("cannot run processes as other hosts (unshare --uts needs root): %v: %s", err, out)
}

// hostRun runs trendfetch args as host (its host name; "" = this host's)
// under e's environment and returns its exit code (-1 when killed) and
// stderr. started, when set, receives the process as soon as it runs. It
// never ends the test (goroutines call it); a run longer than two minutes
// is killed and returns an error.
func hostRun(e *env, host string, started func(*os.Process), args ...string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	if host != "" {
		cmd = exec.CommandContext(ctx, "unshare", append([]string{"--uts", "--", "sh", "-c", `hostname "$0" && exec "$@"`, host, binary}, args...)...)
	}
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	if started != nil {
		started(cmd.Process)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return -1, stderr.String(), fmt.Errorf("trendfetch %v as %s: still running after 2m; stderr:\n%s", args, host, stderr.String())
	case err == nil:
		return 0, stderr.String(), nil
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String(), nil
	}
	return 0, stderr.String(), err
}

// TestOncePerTickAcrossHosts: two hosts sharing one SQLite dataset and one
// schedule (every 24h, Paris time): the first host's own re-run fetches
// the region again; the second host's run of a region the first captured
// in this slot fetches nothing, records nothing and exits 0, saying which
// host and when (JSON: RFC 3339 UTC; console: the zone named); --force
// fetches it.
func TestOncePerTickAcrossHosts(t *testing.T) {
	requireHosts(t)
	emu, url, e := sampleEnv(t, "US")
	cfg := e.writeConfig("regions: [US]\nschedule: {every: 24h, timezone: Europe/Paris}\n")
	run := func(host string, args ...string) (int, string) {
		t.Helper()
		code, stderr, err := hostRun(e, host, nil, append([]string{"--config", cfg, "--api-endpoint", url, "run", "--region", "US"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		assertNoPanic(t, stderr)
		return code, stderr
	}
	if code, stderr := run("tf-host-a"); code != 0 {
		t.Fatalf("host a: exit %d\n%s", code, stderr)
	}
	units := emu.Units("k")
	if code, stderr := run("tf-host-a"); code != 0 || emu.Units("k") != 2*units {
		t.Errorf("host a again: exit %d, %d units; want its own capture not to count\n%s", code, emu.Units("k"), stderr)
	}
	code, stderr := run("tf-host-b")
	recorded, _ := openStore(t, e.dbPath()).Runs(context.Background(), 0)
	paris, _ := time.LoadLocation("Europe/Paris")
	at := recorded[0].FinishedAt
	var skip map[string]any
	for _, l := range logLines(stderr) {
		if l["host"] != nil {
			skip = l
		}
	}
	if code != 0 || emu.Units("k") != 2*units || len(recorded) != 2 || skip == nil ||
		skip["host"] != "tf-host-a" || skip["captured_at"] != at.Format(time.RFC3339) || skip["level"] != "info" ||
		!strings.Contains(skip["message"].(string), fmt.Sprintf("US was captured by host tf-host-a, run %d, at ", recorded[0].ID)+at.In(paris).Format("2006-01-02 15:04:05 MST")) {
		t.Fatalf("host b after host a: exit %d, %d units more, %d runs; want exit 0 spending nothing, recording nothing, naming host a and %s\n%s",
			code, emu.Units("k")-units, len(recorded), at.Format(time.RFC3339), stderr)
	}
	e.vars["TRENDFETCH_LOG_FORMAT"] = "console"
	if code, stderr = run("tf-host-b"); code != 0 || !strings.Contains(stderr, at.In(paris).Format("15:04:05 MST")) || emu.Units("k") != 2*units {
		t.Errorf("console: exit %d, want 0 naming the time in Paris time\n%s", code, stderr)
	}
	e.vars["TRENDFETCH_LOG_FORMAT"] = "json"
	if code, stderr = run("tf-host-b", "--force"); code != 0 || emu.Units("k") != 3*units {
		t.Errorf("host b --force: exit %d, %d units; want 0 and the chart fetched\n%s", code, emu.Units("k"), stderr)
	}
}

// TestThreeHostsOneDataset (issue 30 item 7): three hosts sharing one Redis
// and one PostgreSQL database run staggered `run` ticks (every 6s, 1s
// apart) over four regions and five replayed days of recorded charts
// (2017 then 2020; an emulator per region, its day set at each tick). At each tick two
// hosts fire at once and the third once they are done; on one tick the
// first host is killed with SIGKILL while its second page is in flight and
// another host takes the region over once its lease expires. Afterwards:
// each tick cost the API exactly what a single host's SQLite replay of the
// same days cost (plus the killed run's pages), so no region was fetched
// twice in one tick; the runs say the same (one success per region and
// tick, the killed run abandoned); the limiter counted what the API
// charged; and the PostgreSQL dataset equals the SQLite one capture for
// capture and entry for entry, the killed run's partial capture aside,
// with as many videos and no duplicate row.
func TestThreeHostsOneDataset(t *testing.T) {
	skipIfShort(t, "a 45-second replay")
	requireHosts(t)
	data := youtubetest.DataDir(t)
	_, db := pgDatabase(t)
	rdb := redistest.Start(t)
	const (
		days          = 5
		every         = 6 * time.Second
		stagger       = time.Second
		killRegion    = 1 // GB
		killDay       = 2
		leaseTTL      = 2 * time.Second
		firstPageSize = 50
	)
	type region struct {
		code  string
		emu   *youtubetest.Server
		url   string
		dates []string
	}
	var rs []*region
	for _, code := range []string{"US", "GB", "CA", "FR"} {
		emu := youtubetest.New()
		dates := replayDays(t, emu, data, code, days)
		rs = append(rs, &region{code: code, emu: emu, url: emu.StartTest(t), dates: dates})
	}
	config := fmt.Sprintf("regions: [US, GB, CA, FR]\nschedule: {every: %s, stagger: %s, timezone: UTC}\nruns: {lease_ttl: %s}\nstats: {track_for: 0s}\n", every, stagger, leaseTTL)
	runArgs := func(e *env, r *region) []string {
		return []string{"--config", filepath.Join(e.dir, "trendfetch.yaml"), "--api-endpoint", r.url, "run", "--region", r.code}
	}

	// The single-host replay: SQLite, the same days, region after region.
	start := time.Now()
	single := newEnv(t)
	single.vars["YOUTUBE_API_KEY"] = "k-single"
	single.writeConfig(config)
	want := make([][days]int64, len(rs)) // units each tick cost the single host
	for d := range days {
		for i, r := range rs {
			if err := r.emu.SetDate(r.dates[d]); err != nil {
				t.Fatal(err)
			}
			before := r.emu.Units("k-single")
			code, stderr, err := hostRun(single, "", nil, runArgs(single, r)...)
			if err != nil || code != 0 {
				t.Fatalf("single host, %s day %d: exit %d, %v\n%s", r.code, d, code, err, stderr)
			}
			want[i][d] = r.emu.Units("k-single") - before
		}
	}
	t.Logf("single-host SQLite replay: %s", time.Since(start).Round(time.Millisecond))

	// Three hosts, one PostgreSQL dataset, one Redis.
	hosts := []string{"tf-host-a", "tf-host-b", "tf-host-c"}
	keys := map[string]string{}
	envs := map[string]*env{}
	for n, h := range hosts {
		keys[h] = fmt.Sprintf("key-%d", n) // nothing in common with h: logs mask the key's fragments
		e := newEnv(t)
		e.vars["YOUTUBE_API_KEY"] = keys[h]
		e.vars["TRENDFETCH_DATABASE"] = db
		e.vars["TRENDFETCH_REDIS_URL"] = rdb.URL()
		e.writeConfig(config)
		envs[h] = e
	}
	hostUnits := func(r *region) (n int64) {
		for _, h := range hosts {
			n += r.emu.Units(keys[h])
		}
		return n
	}
	// Ticks are aligned to midnight UTC, as the scheduler aligns them.
	now := time.Now()
	first := now.Truncate(every).Add(every)
	if first.Sub(now) < time.Second {
		first = first.Add(every)
	}
	tick := func(d, i int) time.Time { return first.Add(time.Duration(d)*every + time.Duration(i)*stagger) }
	type attempt struct {
		host   string
		code   int
		stderr string
	}
	var (
		mu       sync.Mutex
		problems []string
		got      = make([][days]int64, len(rs))
		attempts = make([][days][]attempt, len(rs))
		partial  int64 // the killed run's units
		victim   struct {
			host string
			pid  int
		}
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	start = time.Now()
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fire := func(d int, host string, started func(*os.Process)) attempt {
				code, stderr, err := hostRun(envs[host], host, started, runArgs(envs[host], r)...)
				if err != nil {
					fail("%s day %d, %s: %v", r.code, d, host, err)
				}
				if time.Now().After(tick(d+1, i)) {
					fail("%s day %d, %s: ended after the slot (the machine is too slow for a %s schedule)", r.code, d, host, every)
				}
				return attempt{host, code, stderr}
			}
			for d := range days {
				time.Sleep(time.Until(tick(d, i)) + 20*time.Millisecond)
				if err := r.emu.SetDate(r.dates[d]); err != nil {
					fail("%v", err)
					return
				}
				before := hostUnits(r)
				order := []string{hosts[(d+i)%3], hosts[(d+i+1)%3], hosts[(d+i+2)%3]}
				var tries []attempt
				if i == killRegion && d == killDay {
					// order[0] is killed while its second page is in flight;
					// order[1] fires at once (it waits for the dead host's
					// lease to expire, issue 39 item 4), order[2]
					// once the lease expired (it takes the region over, or
					// finds order[1]'s capture).
					key := keys[order[0]]
					inFlight := make(chan struct{}, 1)
					r.emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
						if k := req.URL.Query().Get("key"); (k != key && req.Header.Get("X-Goog-Api-Key") != key) || req.URL.Query().Get("pageToken") == "" {
							return false
						}
						select {
						case inFlight <- struct{}{}:
						default:
						}
						<-req.Context().Done()
						return true
					})
					spent := r.emu.Units(key)
					procs, killed := make(chan *os.Process, 1), make(chan attempt, 1)
					go func() { killed <- fire(d, order[0], func(p *os.Process) { procs <- p }) }()
					p := <-procs
					select {
					case <-inFlight:
					case <-time.After(30 * time.Second):
						fail("%s day %d: %s never asked for page 2", r.code, d, order[0])
					}
					p.Kill()
					tries = append(tries, <-killed)
					expired := time.Now().Add(leaseTTL + 300*time.Millisecond)
					r.emu.SetHook(nil)
					mu.Lock()
					victim.host, partial = order[0], r.emu.Units(key)-spent
					mu.Unlock()
					tries = append(tries, fire(d, order[1], nil))
					time.Sleep(time.Until(expired))
					tries = append(tries, fire(d, order[2], nil))
				} else {
					// Two hosts fire at once, the third once they are done.
					var pair sync.WaitGroup
					tries = make([]attempt, 2)
					for k := range 2 {
						pair.Add(1)
						go func() { defer pair.Done(); tries[k] = fire(d, order[k], nil) }()
					}
					pair.Wait()
					tries = append(tries, fire(d, order[2], nil))
				}
				mu.Lock()
				got[i][d] = hostUnits(r) - before
				attempts[i][d] = tries
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("three hosts on PostgreSQL: %s", time.Since(start).Round(time.Millisecond))
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Each tick cost the API what it cost the single host: no region was
	// fetched twice in one tick; the killed run's pages come on top.
	for i, r := range rs {
		for d := range days {
			w := want[i][d]
			if i == killRegion && d == killDay {
				if partial < 1 || partial >= w {
					t.Errorf("%s day %d: the killed run spent %d units, want some of the %d of a whole chart", r.code, d, partial, w)
				}
				w += partial
			}
			if got[i][d] != w {
				t.Errorf("%s day %d: the hosts spent %d units at the API, want %d (a single host's); attempts: %+v", r.code, d, got[i][d], w, attempts[i][d])
			}
		}
	}

	// The runs: per region and tick one success; the killed run abandoned by
	// the run that took its region over.
	ctx := context.Background()
	pgStore, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pgStore.Close()
	runs, err := pgStore.RunsPage(ctx, store.RunsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	success := map[[2]int]store.Run{}
	capturers := map[string]int{}
	for _, run := range runs {
		i := slices.IndexFunc(rs, func(r *region) bool { return r.code == run.Region })
		d := int(run.StartedAt.Sub(tick(0, i)) / every)
		switch {
		case run.Outcome == store.OutcomeSuccess && success[[2]int{i, d}].ID == 0:
			success[[2]int{i, d}] = run
			capturers[run.Host]++
		case run.Outcome == store.OutcomeAbandoned && i == killRegion && d == killDay && run.Host == victim.host:
			victim.pid = run.PID
		default:
			t.Errorf("unexpected run (day %d): %+v", d, run)
		}
	}
	if len(success) != len(rs)*days || victim.pid == 0 {
		t.Errorf("%d successful runs, want one per region and tick (%d); killed run found: %v", len(success), len(rs)*days, victim.pid != 0)
	}
	if len(capturers) < 2 {
		t.Errorf("captures by host %v: want the ticks shared between hosts", capturers)
	}
	t.Logf("captures by host: %v", capturers)
	// Every attempt that did not capture said who had (exit 0) or found the
	// region's lease held (exit 3).
	for i, r := range rs {
		for d := range days {
			capt := success[[2]int{i, d}]
			for _, a := range attempts[i][d] {
				switch {
				case a.host == victim.host && i == killRegion && d == killDay:
				case a.code == 0 && a.host == capt.Host:
				case a.code == 0 && strings.Contains(a.stderr, fmt.Sprintf(`"host":%q`, capt.Host)) && strings.Contains(a.stderr, "was captured by host "+capt.Host):
				case a.code == 3:
				default:
					t.Errorf("%s day %d, %s: exit %d; want 0 naming %s (the capturer) or 3\n%s", r.code, d, a.host, a.code, capt.Host, a.stderr)
				}
			}
		}
	}

	// The limiter (Redis) counted what the API charged.
	var charged int64
	for _, r := range rs {
		charged += hostUnits(r)
	}
	if used := bucketUsed(quotaStatus(t, envs[hosts[0]]), "units"); used != charged {
		t.Errorf("the limiter counted %d units, the API charged %d", used, charged)
	}

	// The datasets: capture for capture, entry for entry.
	sqliteStore := openStore(t, single.dbPath())
	pgCaptures, sqliteCaptures := exportCaptures(t, pgStore), exportCaptures(t, sqliteStore)
	for _, r := range rs {
		var whole [][]store.ExportRow
		partials := 0
		for _, c := range pgCaptures[r.code] {
			if c[0].Complete {
				whole = append(whole, c)
				continue
			}
			partials++
			if r.code != rs[killRegion].code || len(c) != firstPageSize {
				t.Errorf("%s: a partial capture of %d entries, want only the killed run's page", r.code, len(c))
			}
		}
		if r.code == rs[killRegion].code && partials != 1 {
			t.Errorf("%s: %d partial captures, want the killed run's", r.code, partials)
		}
		if len(whole) != days || len(sqliteCaptures[r.code]) != days {
			t.Errorf("%s: %d complete captures on PostgreSQL, %d on SQLite; want %d", r.code, len(whole), len(sqliteCaptures[r.code]), days)
			continue
		}
		for d := range days {
			if !reflect.DeepEqual(whole[d], sqliteCaptures[r.code][d]) {
				t.Errorf("%s day %d: the PostgreSQL capture differs from the SQLite one (%d and %d entries)", r.code, d, len(whole[d]), len(sqliteCaptures[r.code][d]))
			}
		}
	}
	// No duplicate row: as many videos and entries (the partial capture
	// aside), and no text version equal to the one before it. The number of
	// versions may differ: a video on two regions' charts with different
	// recorded texts changes as often as the order of the regions' runs,
	// which overlap on several hosts (docs/design.md §6).
	counts := func(driver, dsn string) []int64 {
		t.Helper()
		sdb, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		var n [4]int64
		same := func(a, b string) string {
			var c []string
			for _, col := range []string{"title", "description", "channel_title", "category_id", "tags", "thumbnail_url"} {
				c = append(c, a+"."+col+" = "+b+"."+col)
			}
			return strings.Join(c, " AND ")
		}
		err = sdb.QueryRow(`SELECT (SELECT count(*) FROM videos), (SELECT count(*) FROM entries), (SELECT count(*) FROM video_texts),
  (SELECT count(*) FROM video_texts a JOIN video_texts b ON b.video = a.video AND b.version = a.version + 1 WHERE `+same("a", "b")+`)
+ (SELECT count(*) FROM video_texts a JOIN videos b ON b.rowid = a.video AND b.text_version = a.version + 1 WHERE `+same("a", "b")+`)`).Scan(&n[0], &n[1], &n[2], &n[3])
		if err != nil {
			t.Fatal(err)
		}
		if n[3] != 0 {
			t.Errorf("%s: %d text versions equal to the one before", driver, n[3])
		}
		t.Logf("%s: %d videos, %d entries, %d earlier text versions", driver, n[0], n[1], n[2])
		return n[:2]
	}
	pgCounts, sqliteCounts := counts("pgx", db), counts("sqlite", single.dbPath())
	pgCounts[1] -= firstPageSize // the killed run's partial capture
	if !slices.Equal(pgCounts, sqliteCounts) {
		t.Errorf("videos, entries: %v on PostgreSQL (the partial capture aside), %v on SQLite", pgCounts, sqliteCounts)
	}
}

// replayDays loads the first n recorded trending days of region code into
// emu, those of 2017 then those of 2020 (GB and CA have 3 days in 2017),
// and returns their dates (YYYY-MM-DD).
func replayDays(t *testing.T, emu *youtubetest.Server, data, code string, n int) []string {
	t.Helper()
	var dates []string
	charts := map[string][]*youtube.Video{}
	for _, p := range []string{"kaggle_youtube_new_2017/" + code + "videos.csv", "rsrishav_trending_2020/" + code + "_youtube_trending_data.csv"} {
		f, err := os.Open(filepath.Join(data, p))
		if err != nil {
			t.Fatal(err)
		}
		ds, cs, err := youtubetest.LoadCSVCharts(f, code)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if len(dates) < n {
				dates, charts[d] = append(dates, d), cs[d]
			}
		}
	}
	if err := emu.LoadDays(code, dates, charts); err != nil {
		t.Fatal(err)
	}
	if dates = emu.Dates(code); len(dates) != n {
		t.Fatalf("%s: %d recorded days, want %d", code, len(dates), n)
	}
	return dates
}

// exportCaptures returns st's captures by region, each its entries in rank
// order as the store exports them, without what differs between two
// replays of the same days (the ids and times of captures and runs).
func exportCaptures(t *testing.T, st *store.Store) map[string][][]store.ExportRow {
	t.Helper()
	out := map[string][][]store.ExportRow{}
	last := int64(0)
	err := st.Export(context.Background(), store.ExportQuery{GroupBy: []string{"region"}}, func(row *store.ExportRow) error {
		c := *row
		if c.CaptureID != last {
			out[c.Region] = append(out[c.Region], nil)
			last = c.CaptureID
		}
		c.CaptureID, c.RunID, c.VideoKey, c.CapturedAt = 0, 0, 0, time.Time{}
		caps := out[c.Region]
		caps[len(caps)-1] = append(caps[len(caps)-1], c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
