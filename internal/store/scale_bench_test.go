package store

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// Benchmarks of issue 42 (`make bench-*` runs each with -count 3: same-run
// ratios, one round per count).

// benchLatency reports durs' p50 and p95 in milliseconds and returns p50.
func benchLatency(b *testing.B, durs []time.Duration) float64 {
	slices.Sort(durs)
	b.ReportMetric(pctMS(durs, 0.50), "p50-ms")
	b.ReportMetric(pctMS(durs, 0.95), "p95-ms")
	return pctMS(durs, 0.50)
}

// pctMS is the p-quantile of sorted durations, in milliseconds.
func pctMS(sorted []time.Duration, p float64) float64 {
	return float64(sorted[int(p*float64(len(sorted)-1))]) / float64(time.Millisecond)
}

// benchQueryOn runs query on s's database with each of args in turn, every
// row read, and returns its p50 in milliseconds.
func benchQueryOn(b *testing.B, s *Store, query string, args [][]any) float64 {
	ctx := context.Background()
	run := func(a []any) int {
		rows, err := s.db.QueryContext(ctx, query, a...)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return n
	}
	matched := 0
	for _, a := range args {
		matched += run(a)
	}
	if matched == 0 {
		b.Fatal("benchmark query matches nothing")
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		run(args[i%len(args)])
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	return benchLatency(b, durs)
}

// Each engine's floor: a bare ranked match of one word over the newest
// SearchCandidates matches (the search's own bound, without its filters,
// joins and snippets; the best 200), and on PostgreSQL a bare trigram
// match (the newest 200 rows holding the text).
const (
	floorSQLite = `SELECT rowid FROM videos_fts WHERE videos_fts MATCH ?1 AND rowid >= coalesce((
    SELECT rowid FROM videos_fts WHERE videos_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET 9999), 0)
ORDER BY rank LIMIT 200`
	floorPostgres = `SELECT video_rowid FROM (
    SELECT video_rowid, doc FROM video_search WHERE doc @@ $1::tsquery ORDER BY video_rowid DESC LIMIT 10000) c
ORDER BY ts_rank_cd(` + pgRank + `, doc, $1::tsquery) DESC LIMIT 200`
	trigramPostgres = `SELECT video_rowid FROM video_search WHERE tri LIKE $1 ORDER BY video_rowid DESC LIMIT 200`
)

// benchArgs is each query as one argument, wrapped in wrap ("%s": as is).
func benchArgs(qs []string, wrap string) [][]any {
	out := make([][]any, len(qs))
	for i, q := range qs {
		out[i] = []any{fmt.Sprintf(wrap, q)}
	}
	return out
}

// BenchmarkSearchEngines runs every query form of BenchmarkSearchForms at
// limit 200 on SQLite and on PostgreSQL, each holding the same fixture
// (200,000 videos; TRENDFETCH_BENCH_CHARTS=7 adds 7 days of 20 regions'
// charts), with each engine's floor first: floor/sqlite and floor/postgres
// (a bare ranked match of a word over the same candidates). Each form reports x-floor (its p50 over
// its engine's floor) and under postgres x-sqlite (issue 42: <= 2x); a CJK
// form runs PostgreSQL's bare trigram match first and reports x-trigram
// (issue 42: <= 3x).
func BenchmarkSearchEngines(b *testing.B) {
	lite, pst := openBench(b), openBenchPG(b)
	w := benchVocab.Words
	words := []string{w[20], w[40], w[60], w[80]}
	var floor [2]float64
	b.Run("floor/sqlite", func(b *testing.B) { floor[0] = benchQueryOn(b, lite, floorSQLite, benchArgs(words, "%s")) })
	b.Run("floor/postgres", func(b *testing.B) { floor[1] = benchQueryOn(b, pst, floorPostgres, benchArgs(words, "'%s'")) })
	for _, f := range benchForms() {
		var qs []SearchQuery
		for _, t := range f.qs {
			qs = append(qs, SearchQuery{Text: t, Limit: 200})
		}
		var p50, trigram float64
		b.Run(f.name+"/sqlite", func(b *testing.B) {
			p50 = benchSearchOn(b, lite, qs)
			b.ReportMetric(p50/floor[0], "x-floor")
		})
		if f.name == "cjk" || f.name == "cjk2" {
			b.Run(f.name+"/trigram-postgres", func(b *testing.B) {
				trigram = benchQueryOn(b, pst, trigramPostgres, benchArgs(f.qs, "%%%s%%"))
			})
		}
		b.Run(f.name+"/postgres", func(b *testing.B) {
			pg := benchSearchOn(b, pst, qs)
			b.ReportMetric(pg/p50, "x-sqlite")
			b.ReportMetric(pg/floor[1], "x-floor")
			if trigram > 0 {
				b.ReportMetric(pg/trigram, "x-trigram")
			}
		})
	}
}

// benchCharts is TRENDFETCH_BENCH_CHARTS, the days of 20 regions' charts
// (pruneGrower's) the search fixtures hold besides their videos (0: none).
func benchCharts() int {
	days, _ := strconv.Atoi(os.Getenv("TRENDFETCH_BENCH_CHARTS"))
	return days
}

// growCharts stores days of pruneGrower's charts in s and returns the
// time each page took to save.
func growCharts(s *Store, days int) ([]time.Duration, error) {
	g := pruneGrower{s: s, vocab: benchText{storetest.NewVocab(5, 30_000)}, texts: map[string]Video{}}
	for d := range days {
		if err := g.day(d); err != nil {
			return g.pages, err
		}
	}
	return g.pages, nil
}

// scaleSizes are BenchmarkSearchScale's fixture sizes, in videos.
var scaleSizes = []int{200_000, 800_000}

// scaleFixture returns the path of the search fixture of n videos, built
// (buildFixture) on first use and kept in the temp dir by schema version.
func scaleFixture(b *testing.B, n int) string {
	b.Helper()
	migs, err := sqlitedb.Migrations(migrationsFS)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("trendfetch-search-bench-%dk-v%d.db", n/1000, len(migs)))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	start := time.Now()
	os.Remove(path + ".building")
	if err := buildFixture(path+".building", n, 0); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".building", path); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "search fixture: %d videos in %v (%s)\n", n, time.Since(start).Round(time.Second), path)
	return path
}

// BenchmarkSearchScale runs every query form on SQLite at 200,000 and 800,000 videos (read-only,
// as `trendfetch search` opens it), the sizes alternating query by query so that both see the
// same load, and reports each size's p50, x-word (p50 over the word query's at the same size) and
// the local exponent exp-200k-800k of p50 (issue 42: p50 <= 300 ms, <= 10x word, exponent <= 0.5).
func BenchmarkSearchScale(b *testing.B) {
	stores := make([]*Store, len(scaleSizes))
	for i, n := range scaleSizes {
		s, err := OpenReadOnly(context.Background(), scaleFixture(b, n))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	var word []float64
	for _, f := range benchForms() {
		var qs []SearchQuery
		for _, t := range f.qs {
			qs = append(qs, SearchQuery{Text: t, Limit: 200})
		}
		b.Run(f.name, func(b *testing.B) {
			p50 := benchSearchSizes(b, stores, qs)
			if f.name == "word" {
				word = p50
			}
			for i, n := range scaleSizes {
				b.ReportMetric(p50[i], fmt.Sprintf("p50-%dk-ms", n/1000))
				b.ReportMetric(p50[i]/word[i], fmt.Sprintf("x-word-%dk", n/1000))
			}
			last := len(scaleSizes) - 1
			b.ReportMetric(math.Log(p50[last]/p50[0])/math.Log(float64(scaleSizes[last])/float64(scaleSizes[0])), "exp-200k-800k")
		})
	}
}

// benchSearchSizes runs queries in turn, each on every store in turn (b.N rounds), and returns
// each store's p50 in milliseconds.
func benchSearchSizes(b *testing.B, stores []*Store, queries []SearchQuery) []float64 {
	ctx := context.Background()
	durs := make([][]time.Duration, len(stores))
	for range b.N {
		for _, q := range queries {
			for i, s := range stores {
				t0 := time.Now()
				if _, err := s.Search(ctx, q); err != nil {
					b.Fatal(err)
				}
				durs[i] = append(durs[i], time.Since(t0))
			}
		}
	}
	p50 := make([]float64, len(stores))
	for i := range durs {
		slices.Sort(durs[i])
		p50[i] = pctMS(durs[i], 0.5)
	}
	return p50
}

// saveDays is BenchmarkSaveHistory's history: days of 20 regions' charts.
const saveDays = 2

// BenchmarkSaveHistory grows saveDays of 20 regions' charts (pruneGrower:
// run by run, 4 pages of 50 a chart, no search base) in a fresh store of
// each engine, each after its floor (floor/ENGINE: a plain multi-row
// insert of 50 rows of six integers, one transaction each), and reports a
// page's p50 and p90 (ms), x-floor (p50 over the floor's), bytes per
// chart entry (the entries table with its indexes) and under postgres
// x-sqlite of each (issue 42: p50 and p90 <= 3x, bytes <= 2x).
func BenchmarkSaveHistory(b *testing.B) {
	var lite [3]float64 // p50, p90, bytes per entry
	for _, engine := range []string{"sqlite", "postgres"} {
		var floor float64
		b.Run("floor/"+engine, func(b *testing.B) { floor = benchFloorInsert(b, benchEngine(b, engine)) })
		b.Run(engine, func(b *testing.B) {
			var pages []time.Duration
			var bytes float64
			for range b.N {
				s := benchEngine(b, engine)
				p, err := growCharts(s, saveDays)
				if err != nil {
					b.Fatal(err)
				}
				pages, bytes = append(pages, p...), entryBytes(b, s)
			}
			b.StopTimer()
			slices.Sort(pages)
			got := [3]float64{pctMS(pages, 0.5), pctMS(pages, 0.9), bytes}
			for i, unit := range []string{"p50-ms", "p90-ms", "B/entry"} {
				b.ReportMetric(got[i], unit)
				if engine == "sqlite" {
					lite[i] = got[i]
				} else {
					b.ReportMetric(got[i]/lite[i], unit+"-x-sqlite")
				}
			}
			b.ReportMetric(got[0]/floor, "x-floor")
		})
	}
}

// benchEngine is a fresh store of engine (sqlite or postgres) for b.
func benchEngine(b *testing.B, engine string) *Store {
	if engine == "sqlite" {
		s, _ := openTest(b)
		return s
	}
	return openPG(b)
}

// benchFloorInsert inserts 50 rows of six integers per op into a plain
// table of s, one transaction each, and returns the p50 in milliseconds.
func benchFloorInsert(b *testing.B, s *Store) float64 {
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE floor (a BIGINT, b BIGINT, c BIGINT, d BIGINT, e BIGINT, f BIGINT)`); err != nil {
		b.Fatal(err)
	}
	rows := make([]any, 0, 300)
	for i := range 300 {
		rows = append(rows, int64(i)*1_000_003)
	}
	insert := `INSERT INTO floor VALUES ` + strings.Repeat(`(?, ?, ?, ?, ?, ?), `, 49) + `(?, ?, ?, ?, ?, ?)`
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range max(b.N, 200) {
		t0 := time.Now()
		if _, err := s.db.ExecContext(ctx, insert, rows...); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	return benchLatency(b, durs)
}

// entryBytes is the bytes per chart entry of s: the table of entries (on
// PostgreSQL of their pages) with its indexes over its entries.
func entryBytes(b testing.TB, s *Store) float64 {
	size := `SELECT sum(pgsize) FROM dbstat WHERE name IN ('entries', 'entries_video')`
	if s.Engine() == PostgreSQL {
		size = `SELECT sum(pg_total_relation_size(oid)) FROM pg_class WHERE relname IN ('entries', 'entry_pages') AND relkind = 'r'`
	}
	var bytes, n float64
	if err := s.db.QueryRow(size).Scan(&bytes); err != nil {
		b.Fatal(err)
	}
	if err := s.db.QueryRow(`SELECT count(*) FROM entries`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return bytes / n
}
