package store

import (
	"context"
	"testing"
	"time"
)

// TestCallsSince: the calls of one method recorded on a credential's runs
// since a time (store.refresh_per_day counts videos.list.refresh this way),
// other credentials, methods and older runs left out.
func TestCallsSince(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		for _, r := range []Run{
			{Credential: "a", Region: "US", StartedAt: t0.Add(-25 * time.Hour), Calls: map[string]int{"videos.list.refresh": 7}},
			{Credential: "a", Region: "US", StartedAt: t0.Add(-2 * time.Hour), Calls: map[string]int{"videos.list.refresh": 3, "videos.list": 4}},
			{Credential: "a", Region: "GB", StartedAt: t0.Add(-time.Hour), Calls: map[string]int{"videos.list.refresh": 2}},
			{Credential: "b", Region: "US", StartedAt: t0.Add(-time.Hour), Calls: map[string]int{"videos.list.refresh": 5}},
		} {
			id, err := s.StartRun(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			r.ID, r.FinishedAt, r.Outcome = id, r.StartedAt.Add(time.Minute), OutcomeSuccess
			if err := s.FinishRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			cred, method string
			want         int
		}{{"a", "videos.list.refresh", 5}, {"b", "videos.list.refresh", 5}, {"a", "videos.list", 4}, {"a", "search.list", 0}, {"c", "videos.list.refresh", 0}} {
			if got, err := s.CallsSince(ctx, c.cred, c.method, t0.Add(-24*time.Hour)); err != nil || got != c.want {
				t.Errorf("CallsSince(%s, %s) = %d, %v; want %d", c.cred, c.method, got, err, c.want)
			}
		}
	})
}
