package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// Outage test's bucket (units per window), each host's reserve, and the slack allowed between a
// call's admission (Redis TIME) and its arrival at the emulator.
const (
	outageLimit   = 12
	outageWindow  = 4 * time.Second
	outageReserve = 2
	outageSlack   = 250 * time.Millisecond
)

// upstreamCall is one videos.list call as the emulator saw it: when, and which host's key.
type upstreamCall struct {
	at   time.Time
	host string
}

// TestOutageReserveFault (issue 41 item 2): three hosts (UTS namespaces) run their regions over
// and over against one credential on a real redis-server, which is stopped for a random period
// mid-round (SIGKILL with AOF fsync always, or SHUTDOWN SAVE with RDB only) and restarted. The
// chart's policy is reserve. The emulator's videos.list calls never exceed the bucket's limit in
// any window; no host makes more calls than its reserve while Redis is down; after recovery (one
// more run per host records what the reserves spent) `quota status` counts today exactly the
// calls the emulator saw. Rounds: a fixed one (outageHeld), then TRENDFETCH_OUTAGE_ROUNDS
// randomized ones (default 2; `make soak`: 20).
func TestOutageReserveFault(t *testing.T) {
	skipIfShort(t, "rounds of about 10 s with real processes")
	requireHosts(t)
	t.Run("held", func(t *testing.T) { outageRound(t, true, outageHeld) })
	rounds, _ := strconv.Atoi(os.Getenv("TRENDFETCH_OUTAGE_ROUNDS"))
	for round := range max(rounds, 2) {
		t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) { outageRound(t, round%2 == 0, outageRun) })
	}
}

// outageConfig is the hosts' configuration: one bucket for the chart and, with reserve, an
// outage reserve spent by policy reserve (else the chart fails closed).
func outageConfig(reserve bool) string {
	policy := "quota:\n  policies: {videos.list: fail-closed}\n"
	if reserve {
		policy = fmt.Sprintf("quota:\n  reserve: {chart: %d}\n  reserve_for: 1m\n  policies: {videos.list: reserve}\n", outageReserve)
	}
	return fmt.Sprintf("regions: [US, GB, FR, DE]\nstats: {track_for: 0s}\nchannels: {enabled: false}\ncategories: {enabled: false}\n%s"+
		"  buckets:\n    - {name: chart, limit: %d, window: %s}\n  costs: {videos.list: {chart: 1}}\n", policy, outageLimit, outageWindow)
}

// outageDriver runs a round's hosts (run(i): host i runs its region once), stopping Redis once
// (stop) and restarting it (restart); it returns when Redis went down and came back.
type outageDriver func(t *testing.T, run func(i int) (int, string), stop, restart func()) (down, up time.Time)

// outageRound runs one round driven by drive, Redis persisting by AOF (aof) or by an RDB saved
// at shutdown. Hosts 0-2 hold a reserve; host 3 holds none (outageHeld).
func outageRound(t *testing.T, aof bool, drive outageDriver) {
	persist := []string{"--save", "3600 1"}
	if aof {
		persist = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	rdb := redistest.Start(t, persist...)
	hosts := []string{"tf-out-a", "tf-out-b", "tf-out-c", "tf-out-d"}
	regions := []string{"US", "GB", "FR", "DE"}
	var (
		mu    sync.Mutex
		calls []upstreamCall
	)
	emu := youtubetest.New()
	for _, r := range regions {
		emu.SetChart(r, youtubetest.Sample())
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/youtube/v3/videos" {
			mu.Lock()
			calls = append(calls, upstreamCall{at: time.Now(), host: cmp.Or(r.URL.Query().Get("key"), r.Header.Get("X-Goog-Api-Key"))})
			mu.Unlock()
		}
		emu.ServeHTTP(w, r)
	}))
	defer api.Close()
	envs := make([]*env, len(hosts))
	for i, h := range hosts {
		envs[i] = newEnv(t)
		envs[i].vars["YOUTUBE_API_KEY"], envs[i].vars["TRENDFETCH_REDIS_URL"] = h, rdb.URL()
		envs[i].writeConfig(outageConfig(i < 3))
	}
	run := func(i int) (int, string) {
		code, stderr, err := hostRun(envs[i], hosts[i], nil, "--config", filepath.Join(envs[i].dir, "trendfetch.yaml"),
			"--api-endpoint", api.URL, "run", "--force", "--region", regions[i])
		if err != nil {
			t.Error(err)
		}
		return code, stderr
	}
	down, up := drive(t, run, func() {
		if aof {
			rdb.Kill()
		} else {
			rdb.Do("SHUTDOWN", "SAVE")
		}
	}, rdb.Restart)
	for i := range 3 { // after recovery: each host records what its reserve spent
		if code, stderr := run(i); code != 0 && code != 75 {
			t.Errorf("%s after recovery: exit %d\n%s", hosts[i], code, stderr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	checkWindows(t, calls)
	checkReserves(t, calls, down, up)
	checkStatusCounts(t, envs[0], len(calls))
}

// outageRun (an outageDriver) runs hosts 0-2 over and over for about 8 s, stopping Redis at a
// random moment for a random period.
func outageRun(t *testing.T, run func(i int) (int, string), stop, restart func()) (down, up time.Time) {
	end := time.Now().Add(8 * time.Second)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if code, stderr := run(i); code != 0 && code != 75 {
					t.Errorf("host %d: exit %d, want 0 or 75 (a clean stop)\n%s", i, code, stderr)
				}
			}
		}()
	}
	time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
	down = time.Now()
	stop()
	time.Sleep(time.Duration(1500+rand.IntN(2000)) * time.Millisecond)
	restart()
	up = time.Now()
	wg.Wait()
	return down, up
}

// outageHeld (an outageDriver): holds taken while the window was empty keep counting once
// another host fills it. Hosts 0-2 run once (each holds its reserve), host 3 (none) runs until
// denied, Redis stops, and hosts 0-2 run again from their reserves, all within one window.
func outageHeld(t *testing.T, run func(i int) (int, string), stop, restart func()) (down, up time.Time) {
	each := func() {
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if code, stderr := run(i); code != 0 {
					t.Errorf("host %d: exit %d, want 0\n%s", i, code, stderr)
				}
			})
		}
		wg.Wait()
	}
	each()
	for range outageLimit {
		code, stderr := run(3)
		if code != 0 && code != 75 {
			t.Errorf("host 3: exit %d, want 0 or 75\n%s", code, stderr)
		}
		if code != 0 {
			break
		}
	}
	down = time.Now()
	stop()
	each()
	restart()
	return down, time.Now()
}

// checkWindows fails when more than outageLimit calls arrived within any window (less the slack).
func checkWindows(t *testing.T, calls []upstreamCall) {
	t.Helper()
	at := make([]time.Time, len(calls))
	for i, c := range calls {
		at[i] = c.at
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i, j := 0, 0; j < len(at); j++ {
		for at[j].Sub(at[i]) > outageWindow-outageSlack {
			i++
		}
		if n := j - i + 1; n > outageLimit {
			t.Fatalf("%d calls reached the API between %s and %s, within one %s window: the limit is %d", n, at[i].Format(time.StampMicro), at[j].Format(time.StampMicro), outageWindow, outageLimit)
		}
	}
	t.Logf("%d calls reached the API", len(at))
	if len(at) < outageLimit {
		t.Errorf("only %d calls in the round: the hosts did not test the limit", len(at))
	}
}

// checkReserves fails when a host made more calls than its reserve while Redis was down, plus
// the one call it may have had admitted and in flight when Redis stopped.
func checkReserves(t *testing.T, calls []upstreamCall, down, up time.Time) {
	t.Helper()
	per := map[string]int{}
	for _, c := range calls {
		if c.at.After(down) && c.at.Before(up) {
			per[c.host]++
		}
	}
	t.Logf("Redis down %s; calls while down, per host: %v", up.Sub(down).Round(time.Millisecond), per)
	for host, n := range per {
		if n > outageReserve+1 {
			t.Errorf("host %s made %d calls while Redis was down, its reserve is %d", host, n, outageReserve)
		}
	}
}

// checkStatusCounts fails unless `quota status` counts today exactly the calls the emulator saw.
func checkStatusCounts(t *testing.T, e *env, calls int) {
	t.Helper()
	res := e.run("--config", filepath.Join(e.dir, "trendfetch.yaml"), "quota", "status", "--json")
	var st struct {
		Buckets []outageBucket `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatalf("quota status --json: %v\n%s%s", err, res.stdout, res.stderr)
	}
	i := slices.IndexFunc(st.Buckets, func(b outageBucket) bool { return b.Name == "chart" })
	if i < 0 || st.Buckets[i].UsedToday != int64(calls) {
		t.Errorf("quota status: %s; want chart used today = the %d calls the emulator saw", res.stdout, calls)
	}
}

// outageBucket is what checkStatusCounts reads of a bucket of `quota status --json`.
type outageBucket struct {
	Name      string `json:"name"`
	UsedToday int64  `json:"used_today"`
}
