package store

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// Prune benchmark fixture (issue 42): 20 regions, a chart of 200 every 2
// hours (12 a day), grown run by run through StartRun, SaveSnapshot (pages
// of 50), CompleteCapture and FinishRun, as a scheduler grows a database,
// never VACUUMed. Ranks 1-40 come from a pool all regions share (a video
// stays 40 charts), the others from the region's own (4 new a chart, each
// stays 40-50 charts); statistics change every chart. Built once for
// pruneDays (one database grown to 60 days, copied at 10 and 30) and
// cached in the temp dir by schema version.
var pruneDays = []int{10, 30, 60}

const pruneRegions = 20

var pruneStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pruneFixture returns the path of the cached fixture of days days.
func pruneFixture(b *testing.B, days int) string {
	b.Helper()
	migs, err := sqlitedb.Migrations(migrationsFS)
	if err != nil {
		b.Fatal(err)
	}
	path := func(d int) string {
		return filepath.Join(os.TempDir(), fmt.Sprintf("trendfetch-prune-bench-%dd-v%d.db", d, len(migs)))
	}
	if _, err := os.Stat(path(days)); err == nil {
		return path(days)
	}
	start := time.Now()
	tmp := filepath.Join(b.TempDir(), "grow.db")
	s, err := Open(context.Background(), tmp)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := pruneGrower{s: s, vocab: benchText{storetest.NewVocab(5, 30_000)}, texts: map[string]Video{}}
	done := 0
	for _, d := range pruneDays {
		for ; done < d; done++ {
			if err := g.day(done); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		if err := copyFile(tmp, path(d)+".building"); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(path(d)+".building", path(d)); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "prune fixture: %d days in %v (%s)\n", d, time.Since(start).Round(time.Second), path(d))
	}
	return path(days)
}

// pruneGrower stores the fixture's charts; texts keeps each video's text
// (drawn once) so a video's text does not change from chart to chart;
// pages gets the time each page took to save.
type pruneGrower struct {
	s     *Store
	vocab benchText
	texts map[string]Video
	pages []time.Duration
}

// video returns the video id with the fixture's text and views.
func (g *pruneGrower) video(id string, views int64) Video {
	v, ok := g.texts[id]
	if !ok {
		v = g.vocab.video(id)
		g.texts[id] = v
	}
	v.Views = i64(views)
	return v
}

// day stores the 12 charts of every region of day d.
func (g *pruneGrower) day(d int) error {
	ctx := context.Background()
	for c := 0; c < 12; c++ {
		step := d*12 + c
		at := pruneStart.Add(time.Duration(step) * 2 * time.Hour)
		for r := 0; r < pruneRegions; r++ {
			region := fmt.Sprintf("R%c", 'A'+r)
			run, err := g.s.StartRun(ctx, Run{Region: region, StartedAt: at})
			if err != nil {
				return err
			}
			for p := 0; p < 4; p++ {
				page := make([]Video, 50)
				for j := range page {
					n := p*50 + j
					id := fmt.Sprintf("r%02d-%07d", r, step*4+n)
					if n < 40 {
						id = fmt.Sprintf("g-%07d", step+n)
					}
					page[j] = g.video(id, int64(step*1000+n))
				}
				t0 := time.Now()
				if err := g.s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: p*50 + 1, Videos: page, At: at}); err != nil {
					return err
				}
				g.pages = append(g.pages, time.Since(t0))
			}
			if err := g.s.CompleteCapture(ctx, run, region, KindChart, "", at); err != nil {
				return err
			}
			if err := g.s.FinishRun(ctx, Run{ID: run, Outcome: OutcomeSuccess, FinishedAt: at.Add(time.Minute)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkPrune prunes the older half of the fixture at 10, 30 and 60
// days (each op on a fresh copy, the copy untimed) and reports ms, CPU ms
// of this process (getrusage: steadier on a shared machine), µs per
// deleted entry and, at 60 days, the local exponents from 10 days
// (exp-10-60, cpu-exp-10-60) and 30 days (exp-30-60) of this round
// (issue 42: <= 1.1).
// -count=N interleaves the sizes.
func BenchmarkPrune(b *testing.B) {
	ms, cpuMS := map[int]float64{}, map[int]float64{}
	for _, days := range pruneDays {
		b.Run(fmt.Sprintf("days=%d", days), func(b *testing.B) {
			src := pruneFixture(b, days)
			var total, cpu time.Duration
			var entries int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dst := filepath.Join(b.TempDir(), "prune.db")
				if err := copyFile(src, dst); err != nil {
					b.Fatal(err)
				}
				s, err := Open(context.Background(), dst)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0, c0 := time.Now(), cpuTime()
				rep, err := s.Prune(context.Background(), pruneStart.AddDate(0, 0, days/2), false)
				total, cpu = total+time.Since(t0), cpu+cpuTime()-c0
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				entries = rep.Entries
				s.Close()
			}
			ms[days] = float64(total) / float64(time.Millisecond) / float64(b.N)
			cpuMS[days] = float64(cpu) / float64(time.Millisecond) / float64(b.N)
			b.ReportMetric(ms[days], "ms/prune")
			b.ReportMetric(cpuMS[days], "cpu-ms/prune")
			b.ReportMetric(ms[days]*1000/float64(entries), "µs/entry")
			b.ReportMetric(float64(entries), "entries")
			if days == 60 && ms[10] > 0 && ms[30] > 0 {
				b.ReportMetric(math.Log(ms[60]/ms[10])/math.Log(6), "exp-10-60")
				b.ReportMetric(math.Log(ms[60]/ms[30])/math.Log(2), "exp-30-60")
				b.ReportMetric(math.Log(cpuMS[60]/cpuMS[10])/math.Log(6), "cpu-exp-10-60")
			}
		})
	}
}
