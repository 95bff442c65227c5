package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/pgtest"
	"github.com/trendfetch/trendfetch/internal/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// pg is the package's PostgreSQL server, started by the first test that
// needs it and stopped by TestMain.
var pg pgtest.Shared

// forEachStore runs body once on SQLite (the engine's default database)
// and once on PostgreSQL (a database of its own; without a server the
// subtest is skipped, or fails under CI=true).
func forEachStore(t *testing.T, body func(t *testing.T, database func(e *Engine))) {
	t.Run("sqlite", func(t *testing.T) { body(t, func(*Engine) {}) })
	t.Run("postgres", func(t *testing.T) {
		url := pg.Database(t)
		body(t, func(e *Engine) { e.cfg.Database = url })
	})
}

// TestOncePerTick: a run of a scheduled region that another host captured
// in the current slot of its schedule starts nothing (no call, no unit
// reserved, no run recorded), returns nil and logs which host and when;
// runs of the previous slot, partial captures and this host's own runs do
// not count; Force and a region outside the schedule run. On both stores.
func TestOncePerTick(t *testing.T) {
	forEachStore(t, func(t *testing.T, database func(*Engine)) {
		ctx := context.Background()
		e, emu, logs := newTestEngine(t, store.PolicyKeep, "US", "GB")
		database(e)
		e.cfg.Regions = []string{"US"} // GB is run by hand, outside the schedule
		e.cfg.Schedule.Every, e.cfg.Schedule.Timezone = config.Duration(24*time.Hour), "UTC"
		var (
			mu   sync.Mutex
			ends []string // the check-ins' ends: path and summary
		)
		monitor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			if !strings.HasSuffix(r.URL.Path, "/start") {
				ends = append(ends, r.URL.Path+" "+string(body))
			}
		}))
		defer monitor.Close()
		e.cfg.Runs.CheckinURL = monitor.URL + "/" + checkin.RegionPlaceholder
		r, err := e.OpenRunner(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		host, _ := os.Hostname()
		now := time.Now()
		plant := func(host string, started time.Time, outcome store.Outcome) int64 {
			t.Helper()
			id, err := r.store.StartRun(ctx, store.Run{Credential: "other", Region: "US", StartedAt: started, Host: host, PID: 7})
			if err == nil && outcome != store.OutcomeRunning {
				unmetered := 0
				if outcome == store.OutcomeSuccessUnmetered {
					unmetered = 1
				}
				err = r.store.FinishRun(ctx, store.Run{ID: id, Outcome: outcome, FinishedAt: started.Add(time.Second), Unmetered: unmetered})
			}
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		var units int64
		run := func(what string, regions []string, wantUnits int64) {
			t.Helper()
			if err := r.RunRegions(ctx, regions); err != nil {
				t.Fatalf("%s: %v\n%s", what, err, logs)
			}
			units += wantUnits
			if got := emu.Units("engine-test-key"); got != units {
				t.Fatalf("%s: %d units spent at the emulator, want %d\n%s", what, got, units, logs)
			}
		}
		// Not captured in this slot: another host's success of the previous
		// slot (every 24h from midnight UTC), its partial captures of this
		// one, a run still marked running, this host's own success.
		plant("host-b", now.Add(-25*time.Hour), store.OutcomeSuccess)
		for _, o := range []store.Outcome{store.OutcomeDenied, store.OutcomeFailed, store.OutcomeInterrupted, store.OutcomeAbandoned, store.OutcomeRunning} {
			plant("host-b", now, o)
		}
		plant(host, now, store.OutcomeSuccess)
		run("nothing captured by another host", []string{"US"}, 2)

		// Captured by host-b in this slot, a few runs back.
		captured := plant("host-b", now, store.OutcomeSuccessUnmetered)
		plant("host-c", now, store.OutcomeFailed)
		before, _ := r.store.RunsPage(ctx, store.RunsQuery{})
		used := r.limiter.Status(ctx, "default").Buckets[0].Used
		logs.Reset()
		mu.Lock()
		ends = nil
		mu.Unlock()
		run("captured by host-b", []string{"US"}, 0)
		if after, _ := r.store.RunsPage(ctx, store.RunsQuery{}); len(after) != len(before) {
			t.Errorf("a skipped run was recorded: %d runs, want %d", len(after), len(before))
		}
		if got := r.limiter.Status(ctx, "default").Buckets[0].Used; got != used {
			t.Errorf("the skipped run reserved %d units", got-used)
		}
		var line struct {
			Level, Message, Host, Region string
			Run                          int64
			CapturedAt                   string `json:"captured_at"`
			SlotStart                    string `json:"slot_start"`
			SlotEnd                      string `json:"slot_end"`
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
			t.Fatalf("last log line: %v\n%s", err, logs)
		}
		midnight := now.UTC().Truncate(24 * time.Hour)
		if line.Level != "info" || line.Host != "host-b" || line.Region != "US" || line.Run != captured ||
			line.CapturedAt != now.Add(time.Second).UTC().Format(time.RFC3339) ||
			line.SlotStart != midnight.Format(time.RFC3339) || line.SlotEnd != midnight.Add(24*time.Hour).Format(time.RFC3339) ||
			!strings.Contains(line.Message, fmt.Sprintf("US was captured by host host-b, run %d, at ", captured)+now.Add(time.Second).UTC().Format("2006-01-02 15:04:05 UTC")) {
			t.Errorf("log line %+v: want info naming host-b, run %d, its time in RFC 3339 UTC and the slot [%s, +24h); the message naming the zone", line, captured, midnight)
		}
		mu.Lock()
		if len(ends) != 1 || !strings.HasPrefix(ends[0], fmt.Sprintf("/us/0 US not run; US was captured by host host-b, run %d,", captured)) {
			t.Errorf("check-ins: %q, want US's exit 0 with no run and the reason", ends)
		}
		mu.Unlock()
		// The schedule's path (RunOne) skips it too.
		if run, err := r.RunOne(ctx, "US"); err != nil || run.ID != 0 || emu.Units("engine-test-key") != units {
			t.Errorf("RunOne: run %d, %v, %d units; want skipped", run.ID, err, emu.Units("engine-test-key"))
		}
		// Force fetches it anyway; a region outside the schedule has no slot.
		r.Force = true
		run("--force", []string{"US"}, 2)
		r.Force = false
		plant("host-b", now, store.OutcomeSuccess) // not GB's
		run("GB, outside the schedule", []string{"GB"}, 2)
	})
}
