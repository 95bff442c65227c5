package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestCoverage: each slot of each region's schedule (stagger included) that started in the
// period gets its outcome from the runs started in it, recorded through the store by several
// hosts: captured whole (the first success, over an earlier failure), captured partially
// (pages stored, then failed), denied (bucket, retry time), interrupted (or abandoned),
// running, missed; runs before the period and the slot in progress without a run are left
// out; totals count every outcome. On both stores.
func TestCoverage(t *testing.T) {
	forEachStore(t, func(t *testing.T, database func(*Engine)) {
		ctx := context.Background()
		e, _, _ := newTestEngine(t, store.PolicyKeep, "US", "GB")
		database(e)
		e.cfg.Schedule.Every, e.cfg.Schedule.Timezone = config.Duration(2*time.Hour), "UTC" // GB: +3m
		st, err := e.OpenStore(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		at := func(hhmmss string) time.Time {
			return time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC).Add(hms(t, hhmmss))
		}
		plant := func(region, host, started string, o store.Outcome, reason string, pages int) {
			t.Helper()
			id, err := st.StartRun(ctx, store.Run{Credential: "main", Region: region, StartedAt: at(started), Host: host})
			if err == nil && pages > 0 {
				err = st.SaveSnapshot(ctx, store.Snapshot{RunID: id, Region: region, FirstRank: 1, Videos: youtubeVideos(pages), At: at(started)})
			}
			fin := store.Run{ID: id, Outcome: o, Reason: reason, FinishedAt: at(started).Add(time.Minute)}
			if o == store.OutcomeDenied {
				fin.RetryAfter, fin.RetryAt = time.Hour, at(started).Add(time.Hour)
			}
			if err == nil && o != store.OutcomeRunning {
				err = st.FinishRun(ctx, fin)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		plant("US", "fetch-a", "01:59:00", store.OutcomeSuccess, "", 0) // before the period's first slot
		plant("US", "fetch-a", "02:00:04", store.OutcomeSuccess, "", 0)
		plant("US", "fetch-a", "04:00:01", store.OutcomeFailed, "HTTP 500", 0)
		plant("US", "fetch-b", "04:00:03", store.OutcomeSuccess, "", 0)
		plant("US", "fetch-a", "06:00:00", store.OutcomeDenied, `quota denied videos.list by bucket "units"`, 0)
		plant("US", "fetch-b", "10:00:02", store.OutcomeRunning, "", 0) // the slot in progress
		plant("GB", "fetch-b", "02:03:00", store.OutcomeFailed, "HTTP 503", 2)
		plant("GB", "fetch-a", "04:03:00", store.OutcomeInterrupted, "signal", 0)
		plant("GB", "fetch-a", "06:03:00", store.OutcomeAbandoned, "", 0)

		c, err := e.Coverage(ctx, st, "", 10*time.Hour, at("11:00:00"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, rc := range c.Regions {
			var lines []string
			for _, s := range rc.Slots {
				lines = append(lines, slotLine(s))
			}
			got[rc.Region] = strings.Join(lines, "\n") + "\n" + totalsLine(rc.Totals)
		}
		want := map[string]string{
			"US": `02:00 captured fetch-a 02:00:04 whole=true runs=1
04:00 captured fetch-b 04:00:03 whole=true runs=2
06:00 denied fetch-a 06:00:00 bucket=units retry=07:00:00 runs=1
08:00 missed - - runs=0
10:00 running fetch-b 10:00:02 runs=1
captured=2 denied=1 failed=0 interrupted=0 running=1 missed=1`,
			"GB": `02:03 captured fetch-b 02:03:00 whole=false runs=1
04:03 interrupted fetch-a 04:03:00 runs=1
06:03 interrupted fetch-a 06:03:00 runs=1
08:03 missed - - runs=0
captured=1 denied=0 failed=0 interrupted=2 running=0 missed=1`,
		}
		for region, w := range want {
			if got[region] != w {
				t.Errorf("coverage of %s:\n%s\nwant:\n%s", region, got[region], w)
			}
		}
		if c.Timezone != "UTC" || !c.From.Equal(at("01:00:00")) || !c.To.Equal(at("11:00:00")) {
			t.Errorf("period %s to %s in %s, want 01:00 to 11:00 UTC", c.From, c.To, c.Timezone)
		}
		checkCoverageJSON(t, c)
		if _, err := e.Coverage(ctx, st, "JP", time.Hour, at("11:00:00")); !isUsage(err) || !strings.Contains(err.Error(), "JP") {
			t.Errorf("coverage of an unscheduled region: %v, want a usage error naming it", err)
		}
	})
}

// slotLine is a slot in short: start, outcome, host, run start, what else it says.
func slotLine(s store.Slot) string {
	f := []string{s.Start.Format("15:04"), string(s.Outcome), "-", "-"}
	if s.Host != nil {
		f[2], f[3] = *s.Host, s.StartedAt.Format("15:04:05")
	}
	if s.Whole != nil {
		f = append(f, "whole="+map[bool]string{true: "true", false: "false"}[*s.Whole])
	}
	if s.Bucket != nil {
		f = append(f, "bucket="+*s.Bucket, "retry="+s.RetryAt.Format("15:04:05"))
	}
	return strings.Join(append(f, "runs="+strconv.Itoa(s.Runs)), " ")
}

// totalsLine is the totals in SlotOutcomes order.
func totalsLine(t map[store.SlotOutcome]int) string {
	var f []string
	for _, o := range store.SlotOutcomes {
		f = append(f, string(o)+"="+strconv.Itoa(t[o]))
	}
	return strings.Join(f, " ")
}

// checkCoverageJSON: snake_case keys, RFC 3339 UTC times, null for what a missed slot lacks.
func checkCoverageJSON(t *testing.T, c store.Coverage) {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		From    string `json:"from"`
		Regions []struct {
			Totals map[string]int   `json:"totals"`
			Slots  []map[string]any `json:"slots"`
		} `json:"regions"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	missed := v.Regions[0].Slots[3]
	for _, k := range []string{"run_id", "host", "started_at", "finished_at", "whole", "reason", "bucket", "retry_at", "pages"} {
		if val, ok := missed[k]; !ok || val != nil {
			t.Errorf("missed slot's %s = %v (present %v), want null", k, val, ok)
		}
	}
	if missed["slot_start"] != "2026-11-26T08:00:00Z" || missed["slot_end"] != "2026-11-26T10:00:00Z" || v.From != "2026-11-26T01:00:00Z" {
		t.Errorf("times not RFC 3339 UTC: %s", b)
	}
	if len(v.Regions[0].Totals) != len(store.SlotOutcomes) {
		t.Errorf("totals %v, want every outcome", v.Regions[0].Totals)
	}
}

// hms is "15:04:05" as a duration.
func hms(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(strings.Replace(strings.Replace(s, ":", "h", 1), ":", "m", 1) + "s")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// youtubeVideos is n videos as the store takes them.
func youtubeVideos(n int) []store.Video {
	out := make([]store.Video, n)
	for i := range out {
		out[i] = store.Video{ID: "coverage00" + string(rune('A'+i)), Title: "t"}
	}
	return out
}

// isUsage reports whether err is a *UsageError.
func isUsage(err error) bool {
	_, ok := err.(*UsageError)
	return ok
}

// TestMissedSlotsGauge: trendfetch_slots_missed{region} counts the ended slots of the last day
// without a run (every 1h: 23 ended slots, one captured), as the metrics textfile shows it.
func TestMissedSlotsGauge(t *testing.T) {
	ctx := context.Background()
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US")
	e.cfg.Schedule.Every, e.cfg.Schedule.Timezone = config.Duration(time.Hour), "UTC"
	st, err := e.OpenStore(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < 5*time.Second {
		time.Sleep(left + time.Second) // not across a tick of the hourly schedule
	}
	now := time.Now()
	id, err := st.StartRun(ctx, store.Run{Credential: "main", Region: "US", StartedAt: now.Add(-2 * time.Hour), Host: "fetch-b"})
	if err == nil {
		err = st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeSuccess})
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trendfetch_US.prom")
	if err := e.metrics(nil, e.cfg.Regions, st).WriteTextfile(path, "US"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if want := `trendfetch_slots_missed{region="US"} 22`; err != nil || !strings.Contains(string(b), want+"\n") {
		t.Errorf("textfile (%v) lacks %s:\n%s", err, want, b)
	}
}
