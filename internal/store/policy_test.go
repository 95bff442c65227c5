package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestApplyPolicyFakeClock: a chart captured at t0 and a stats sample
// taken at t0, judged on a fake clock. youtube at t0+31 days: all gone;
// amended at t0+31 days: statistics kept, text removed (id kept); amended
// at t0+37 months: gone; nothing at t0+29 days. Each dry run reports what
// the real run then removes.
func TestApplyPolicyFakeClock(t *testing.T) {
	t0 := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	setup := func(t *testing.T, s *Store) {
		ctx := context.Background()
		vs := testVideos("f", 3)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs, At: t0}); err != nil {
			t.Fatal(err)
		}
		vs[0].Title = "Renamed"
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs, At: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SaveSamples(ctx, []Sample{{VideoID: "f-002", Views: i64(5)}}, t0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		policy Policy
		now    time.Time
		want   string // the report
		titles string // titles exported afterwards
	}{
		{"youtube 29 days", PolicyYouTube, t0.AddDate(0, 0, 29), "{0 0 0 0 0 0}", "Video f number 0,Video f number 1,Video f number 2,Renamed,Video f number 1,Video f number 2"},
		{"youtube 31 days", PolicyYouTube, t0.AddDate(0, 0, 31), "{2 6 1 0 0 3}", ""},
		{"amended 31 days", PolicyAmended, t0.AddDate(0, 0, 31), "{0 0 0 1 3 0}", ",,,,,"},
		{"amended 37 months", PolicyAmended, t0.AddDate(0, 37, 0), "{2 6 1 0 0 3}", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, s *Store) {
				ctx := context.Background()
				// A new database is not legacy: an unset policy is youtube.
				if p, legacy, err := InForce(ctx, "", s); p != PolicyYouTube || legacy || err != nil {
					t.Fatalf("InForce on a new database: %s %v %v", p, legacy, err)
				}
				setup(t, s)
				dry, err := c.policy.Apply(ctx, s, c.now, true)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := c.policy.Apply(ctx, s, c.now, false)
				if err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprintf("{%d %d %d %d %d %d}", rep.Captures, rep.Entries, rep.Samples, rep.Texts, rep.TextsCleared, rep.Videos)
				if got != c.want || dry != rep {
					t.Errorf("report %s (dry run %+v), want {captures entries samples texts texts_cleared videos} = %s", got, dry, c.want)
				}
				var titles string
				n := 0
				if err := s.Export(ctx, ExportQuery{}, func(r *ExportRow) error {
					if n > 0 {
						titles += ","
					}
					n++
					titles += r.Title
					if r.VideoID == "" || (r.Title == "" && (r.Description != "" || r.Tags != "" || r.ThumbnailURL != "")) {
						t.Errorf("row after %s: %+v", c.name, r)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if titles != c.titles {
					t.Errorf("titles after: %q, want %q", titles, c.titles)
				}
				// Applying again removes nothing more.
				if again, err := c.policy.Apply(ctx, s, c.now, false); err != nil || again != (PruneReport{}) {
					t.Errorf("second run: %+v, %v", again, err)
				}
				ftsIntegrity(t, s)
			})
		})
	}
}
