package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
)

// oneMissedSlot is Options.Coverage as the engine answers for regions US and GB scheduled every
// 2h with one slot missed in the period (the engine's TestCoverage checks the computation).
func oneMissedSlot(now func() time.Time) func(context.Context, string, time.Duration) (store.Coverage, error) {
	return func(_ context.Context, region string, since time.Duration) (store.Coverage, error) {
		to := now().UTC()
		c := store.Coverage{From: to.Add(-since), To: to, Timezone: "UTC", Regions: []store.RegionCoverage{}}
		for _, r := range []string{"US", "GB"} {
			if region != "" && r != region {
				continue
			}
			end := to.Add(-time.Hour)
			totals := map[store.SlotOutcome]int{}
			for _, o := range store.SlotOutcomes {
				totals[o] = 0
			}
			totals[store.SlotMissed] = 1
			c.Regions = append(c.Regions, store.RegionCoverage{Region: r, Schedule: "every 2h0m0s", Totals: totals,
				Slots: []store.Slot{{Start: end.Add(-2 * time.Hour), End: &end, Outcome: store.SlotMissed}}})
		}
		return c, nil
	}
}

// TestRegionsAreTheDatasets: a web node configured for US only serves the dataset's GB too
// (/v1/regions, /v1/dashboard), without a schedule; its configured US keeps its schedule and
// the dashboard row its slots of the last day (issue 39 item 7).
func TestRegionsAreTheDatasets(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) {
		regions := o.Regions
		o.Regions = func(now time.Time) []Region { return regions(now)[:1] } // US
		cover := o.Coverage
		o.Coverage = func(ctx context.Context, _ string, since time.Duration) (store.Coverage, error) {
			return cover(ctx, "US", since)
		}
	})
	_, body := get(t, f.url+"/v1/regions")
	got := map[string]any{}
	for _, r := range body["regions"].([]any) {
		m := r.(map[string]any)
		got[m["region"].(string)] = m["schedule"]
	}
	if len(got) != 2 || got["US"] != "every 2h0m0s" || got["GB"] != nil {
		t.Errorf("/v1/regions: %v, want US every 2h0m0s and GB (from the dataset) with a null schedule", body)
	}
	_, body = get(t, f.url+"/v1/dashboard")
	rows := map[string]map[string]any{}
	for _, r := range body["regions"].([]any) {
		m := r.(map[string]any)
		rows[m["region"].(string)] = m
	}
	if us, gb := rows["US"], rows["GB"]; us == nil || gb == nil || gb["slots_last_day"] != nil || gb["chart"] == nil {
		t.Fatalf("/v1/dashboard regions: US %v, GB %v; want both, GB with its chart and no slots", us != nil, gb)
	}
	if slots, _ := rows["US"]["slots_last_day"].(map[string]any); slots["missed"] != 1.0 || len(slots) != len(store.SlotOutcomes) {
		t.Errorf("/v1/dashboard US slots_last_day = %v, want every outcome, missed 1", rows["US"]["slots_last_day"])
	}
}

// TestCoverageEndpoint: /v1/coverage passes region and since on (default 24h), refuses a bad
// since (400) and a region not scheduled here (404).
func TestCoverageEndpoint(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	resp, body := get(t, f.url+"/v1/coverage?region=GB&since=7d")
	regions, _ := body["regions"].([]any)
	if resp.StatusCode != 200 || len(regions) != 1 || regions[0].(map[string]any)["region"] != "GB" ||
		body["from"] != "2026-02-23T12:00:00Z" || body["timezone"] != "UTC" {
		t.Errorf("/v1/coverage?region=GB&since=7d: %d %v", resp.StatusCode, body)
	}
	if resp, body = get(t, f.url+"/v1/coverage"); resp.StatusCode != 200 || body["from"] != "2026-03-01T12:00:00Z" {
		t.Errorf("/v1/coverage: %d %v, want the last 24h", resp.StatusCode, body)
	}
	for path, status := range map[string]int{"/v1/coverage?since=soon": 400, "/v1/coverage?since=40d": 400, "/v1/coverage?region=JP": 404} {
		if resp, body = get(t, f.url+path); resp.StatusCode != status {
			t.Errorf("%s: %d %v, want %d", path, resp.StatusCode, body, status)
		}
	}
}

// TestHealthzDetailsOnlyWithToken: with a token set, /healthz tells a caller without it only
// that the database cannot be read; with the token, the error itself (issue 39 item 7).
func TestHealthzDetailsOnlyWithToken(t *testing.T) {
	db, lim := shared(t)
	broken, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	broken.Close() // every read fails: "sql: database is closed"
	const token = "s3cret-token-0123456789"
	f := start(t, db, lim, func(o *Options) { o.Token, o.Store = token, broken })
	for _, tc := range []struct {
		hdr    []string
		detail bool
	}{{nil, false}, {[]string{"Authorization", "Bearer wrong-token-0123456789"}, false}, {[]string{"Authorization", "Bearer " + token}, true}} {
		resp, body := get(t, f.url+"/healthz", tc.hdr...)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if resp.StatusCode != http.StatusServiceUnavailable || body["status"] != "unavailable" || strings.Contains(msg, "closed") != tc.detail {
			t.Errorf("/healthz with %v: %d %v, want 503 unavailable, the error's details %v", tc.hdr, resp.StatusCode, body, tc.detail)
		}
	}
}
