package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// hostAttempt is one host's `run --region R` of one slot.
type hostAttempt struct {
	host, region string
	slot, code   int
	stderr       string
}

// TestRedundantHostsCoverEachOther (issue 39 item 4): three hosts (each its own UTS namespace,
// host name and configuration directory) share one redis-server, one PostgreSQL database, the
// emulator and one schedule (every 10 s); at each of five slots every host fires every region
// within the same 100 ms, as cron on synchronised hosts does. Slots 0 and 1: every host exits 0,
// every check-in is `0` (the hosts that did not capture say "captured by host B, run N"), one
// capture per region and slot. Slot 2: the host that holds US is killed with SIGKILL while its
// second page is in flight; a waiting host takes the region over once the dead host's lease
// expires and captures the slot. Slots 3 and 4, Redis stopped: still one capture per region and
// slot (the region's claim in PostgreSQL). Then `coverage --json` lists every slot captured,
// whole, by the host that captured it, and none missed.
func TestRedundantHostsCoverEachOther(t *testing.T) {
	skipIfShort(t, "five slots of 10 s")
	requireHosts(t)
	_, db := pgDatabase(t)
	rdb := redistest.Start(t)
	const (
		every    = 10 * time.Second
		leaseTTL = 2 * time.Second
		slots    = 5
		killSlot = 2
		downFrom = 3 // Redis stopped
	)
	regions := []string{"US", "GB"}
	emu := youtubetest.New()
	for _, r := range regions {
		emu.SetChart(r, youtubetest.Sample())
	}
	url := emu.StartTest(t)
	var (
		mu    sync.Mutex
		pings = map[string][]string{} // check-in path (/host/region/code) -> bodies
	)
	monitor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/start") {
			pings[r.URL.Path] = append(pings[r.URL.Path], string(body))
		}
	}))
	defer monitor.Close()
	hosts := []string{"tf-red-a", "tf-red-b", "tf-red-c"}
	envs := map[string]*env{}
	config := fmt.Sprintf("regions: [US, GB]\nschedule: {every: %s, stagger: 0s, timezone: UTC}\nruns: {lease_ttl: %s, timeout: 1m}\nstats: {track_for: 0s}\n", every, leaseTTL)
	for n, h := range hosts {
		e := newEnv(t)
		e.vars["YOUTUBE_API_KEY"] = fmt.Sprintf("key-%d", n)
		e.vars["TRENDFETCH_DATABASE"] = db
		e.vars["TRENDFETCH_REDIS_URL"] = rdb.URL()
		e.vars["TRENDFETCH_CHECKIN_URL"] = monitor.URL + "/" + h + "/{region}"
		e.writeConfig(config)
		envs[h] = e
	}
	now := time.Now()
	first := now.Truncate(every).Add(every)
	if first.Sub(now) < time.Second {
		first = first.Add(every)
	}
	procs := map[string]*os.Process{} // host/region -> its run of the current slot
	var attempts []hostAttempt
	fire := func(slot int) {
		time.Sleep(time.Until(first.Add(time.Duration(slot)*every)) + 20*time.Millisecond)
		var wg sync.WaitGroup
		for _, h := range hosts {
			for _, r := range regions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					started := func(p *os.Process) { mu.Lock(); procs[h+"/"+r] = p; mu.Unlock() }
					code, stderr, err := hostRun(envs[h], h, started, "--config", filepath.Join(envs[h].dir, "trendfetch.yaml"), "--api-endpoint", url, "run", "--region", r)
					if err != nil {
						t.Error(err)
					}
					if time.Now().After(first.Add(time.Duration(slot+1) * every)) {
						t.Errorf("slot %d, %s %s: ended after the slot (the machine is too slow for a %s schedule)", slot, h, r, every)
					}
					mu.Lock()
					attempts = append(attempts, hostAttempt{h, r, slot, code, stderr})
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
	}
	start := time.Now()
	fire(0)
	fire(1)

	// The host whose US run asks for page 2 first is killed while that page is in flight.
	var victim string
	inFlight := make(chan string, 1)
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		key := req.URL.Query().Get("key") + req.Header.Get("X-Goog-Api-Key")
		if req.URL.Query().Get("regionCode") != "US" || req.URL.Query().Get("pageToken") == "" {
			return false
		}
		mu.Lock()
		if victim == "" {
			victim = hosts[key[len(key)-1]-'0']
			inFlight <- victim
		}
		held := hosts[key[len(key)-1]-'0'] == victim
		mu.Unlock()
		if held {
			<-req.Context().Done()
		}
		return held
	})
	go func() {
		select {
		case h := <-inFlight:
			mu.Lock()
			p := procs[h+"/US"]
			mu.Unlock()
			p.Kill()
		case <-time.After(time.Until(first.Add((killSlot + 1) * every))):
		}
	}()
	fire(killSlot)
	emu.SetHook(nil)
	mu.Lock()
	found := victim != ""
	mu.Unlock()
	if !found {
		t.Fatalf("slot %d: no US run asked for page 2", killSlot)
	}
	rdb.Kill()
	for s := downFrom; s < slots; s++ {
		fire(s)
	}
	mu.Lock() // every process has ended: what the hook and the monitor recorded is final
	defer mu.Unlock()
	t.Logf("%d slots of three hosts: %s; host %s killed in slot %d", slots, time.Since(start).Round(time.Millisecond), victim, killSlot)

	// One capture per region and slot: in slot killSlot, the killed run abandoned by the run that took US over.
	ctx := context.Background()
	st, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.RunsPage(ctx, store.RunsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	captured := map[string]store.Run{} // region/slot -> its capture
	for _, run := range runs {
		slot := int(run.StartedAt.Sub(first) / every)
		key := fmt.Sprintf("%s/%d", run.Region, slot)
		whole := store.OutcomeSuccess
		if slot >= downFrom {
			whole = store.OutcomeSuccessUnmetered
		}
		switch {
		case run.Outcome == whole && captured[key].ID == 0:
			captured[key] = run
		case run.Outcome == store.OutcomeAbandoned && key == fmt.Sprintf("US/%d", killSlot) && run.Host == victim:
		default:
			t.Errorf("slot %d: unexpected run %+v", slot, run)
		}
	}
	if len(captured) != slots*len(regions) {
		t.Errorf("%d captures, want one per region and slot (%d)", len(captured), slots*len(regions))
	}

	// Every host exits 0 (but the killed one), every check-in is 0; the hosts that did not capture name the capture.
	for _, a := range attempts {
		c := captured[fmt.Sprintf("%s/%d", a.region, a.slot)]
		killed := a.host == victim && a.region == "US" && a.slot == killSlot
		if killed != (a.code != 0) {
			t.Errorf("slot %d, %s %s: exit %d (killed: %v)\n%s", a.slot, a.host, a.region, a.code, killed, a.stderr)
		}
		if !killed && a.host != c.Host && !strings.Contains(a.stderr, fmt.Sprintf("captured by host %s, run %d,", c.Host, c.ID)) {
			t.Errorf("slot %d, %s %s: exit %d, not naming the capture (host %s, run %d)\n%s", a.slot, a.host, a.region, a.code, c.Host, c.ID, a.stderr)
		}
	}
	ends, notCapturing := 0, 0
	for path, bodies := range pings {
		ends += len(bodies)
		if !strings.HasSuffix(path, "/0") {
			t.Errorf("check-ins %s: %q, want only 0", path, bodies)
		}
		for _, b := range bodies {
			if strings.Contains(b, " not run; ") && strings.Contains(b, "captured by host ") && strings.Contains(b, ", run ") {
				notCapturing++
			}
		}
	}
	if want := slots*len(hosts)*len(regions) - 1; ends != want || notCapturing != want-slots*len(regions) {
		t.Errorf("%d check-ins, %d naming the capture; want %d and %d: %v", ends, notCapturing, want, want-slots*len(regions), pings)
	}

	// coverage lists every slot captured, whole, by its capture's host; none missed.
	since := (time.Since(first) + 2*time.Second).Truncate(time.Second)
	res := envs[hosts[0]].run("--config", filepath.Join(envs[hosts[0]].dir, "trendfetch.yaml"), "coverage", "--json", "--since", since.String())
	var cov store.Coverage
	if err := json.Unmarshal([]byte(res.stdout), &cov); err != nil || res.code != 0 || len(cov.Regions) != len(regions) {
		t.Fatalf("coverage --json: exit %d, %v\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	for _, rc := range cov.Regions {
		if rc.Totals[store.SlotMissed] != 0 || rc.Totals[store.SlotCaptured] != slots || len(rc.Slots) != slots {
			t.Errorf("coverage of %s: totals %v, %d slots; want %d captured, none missed", rc.Region, rc.Totals, len(rc.Slots), slots)
		}
		for i, s := range rc.Slots {
			c := captured[fmt.Sprintf("%s/%d", rc.Region, i)]
			if !s.Start.Equal(first.Add(time.Duration(i)*every)) || s.Outcome != store.SlotCaptured || s.Whole == nil || !*s.Whole ||
				s.Host == nil || *s.Host != c.Host || s.RunID == nil || *s.RunID != c.ID {
				t.Errorf("coverage of %s, slot %d: %+v; want captured whole by host %s, run %d", rc.Region, i, s, c.Host, c.ID)
			}
		}
	}
}
