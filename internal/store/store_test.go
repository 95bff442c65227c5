package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSavePage(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startRun(t, s, "US")
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		vs := testVideos("a", 50)
		vs[3].Likes, vs[3].Comments = nil, nil
		vs[4].Duration = ""
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: vs, At: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 51, Videos: testVideos("b", 50), At: at}); err != nil {
			t.Fatal(err)
		}
		n, err := s.CountVideos(ctx)
		if err != nil || n != 100 {
			t.Fatalf("CountVideos = %d, %v; want 100", n, err)
		}
		chart, err := s.Chart(ctx, run, "US")
		if err != nil {
			t.Fatal(err)
		}
		if len(chart) != 100 {
			t.Fatalf("chart has %d entries, want 100", len(chart))
		}
		for i, e := range chart {
			if e.Rank != i+1 {
				t.Fatalf("chart[%d].Rank = %d", i, e.Rank)
			}
		}
		if chart[0].VideoID != "a-000" || chart[50].VideoID != "b-000" || chart[50].Title != "Video b number 0" {
			t.Errorf("chart order wrong: %+v %+v", chart[0], chart[50])
		}
		runs, err := s.Runs(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Pages != 2 || runs[0].Videos != 100 || runs[0].Outcome != OutcomeRunning {
			t.Errorf("run = %+v", runs)
		}

		got, err := s.Video(ctx, "a-003")
		if err != nil {
			t.Fatal(err)
		}
		if got.Likes != nil || got.Comments != nil || got.Views == nil || *got.Views != 1003 {
			t.Errorf("stats = %v %v %v", got.Views, got.Likes, got.Comments)
		}
		want := vs[3]
		want.Likes, want.Comments, want.Views = nil, nil, got.Views
		if !reflect.DeepEqual(got.Video, want) {
			t.Errorf("video round trip:\n got %+v\nwant %+v", got.Video, want)
		}
		if !got.FirstSeen.Equal(at) || !got.LastSeen.Equal(at) {
			t.Errorf("seen = %v %v", got.FirstSeen, got.LastSeen)
		}
		if v4, _ := s.Video(ctx, "a-004"); v4.Duration != "" {
			t.Errorf("duration = %q", v4.Duration)
		}
		ftsIntegrity(t, s)

		// Errors: unknown run, duplicate rank (nothing stored), no id.
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: 999, Region: "US", FirstRank: 1, Videos: testVideos("c", 1), At: at}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown run: %v", err)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: testVideos("d", 2), At: at}); err == nil {
			t.Error("duplicate rank accepted")
		}
		if _, err := s.Video(ctx, "d-000"); !errors.Is(err, ErrNotFound) {
			t.Errorf("failed page left video behind: %v", err)
		}
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 200, Videos: []Video{{Title: "x"}}, At: at}); err == nil {
			t.Error("video without id accepted")
		}
		// A page that holds a video twice stores both ranks and the video
		// once, with the later one's statistics.
		twice := append(testVideos("e", 1), testVideos("e", 1)...)
		twice[1].Views = i64(7)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 101, Videos: twice, At: at}); err != nil {
			t.Fatalf("a page holding a video twice: %v", err)
		}
		if chart, err := s.Chart(ctx, run, "US"); err != nil || len(chart) != 102 || chart[101].VideoID != "e-000" {
			t.Errorf("chart after a page holding a video twice: %d entries, %v", len(chart), err)
		}
		if v, err := s.Video(ctx, "e-000"); err != nil || *v.Views != 7 {
			t.Errorf("video stored twice in a page: %+v, %v", v, err)
		}
	})
}

func TestUpsertUpdatesStatsKeepsIndex(t *testing.T) {
	forEachEngine(t, testUpsertUpdatesStatsKeepsIndex)
}

func testUpsertUpdatesStatsKeepsIndex(t *testing.T, s *Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	vs := testVideos("u", 50)
	vs[0].Title = "Original zebra title"
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs, At: t0}); err != nil {
		t.Fatal(err)
	}
	var rowid0 int64
	s.db.QueryRow(`SELECT rowid FROM videos WHERE id = 'u-000'`).Scan(&rowid0)

	// The guarded trigger must not touch the search index for unchanged
	// text: fingerprint the index (SQLite: its FTS5 shadow table, where any
	// write changes at least the structure record, whose cookie counts
	// writes; PostgreSQL: the row versions of video_search, which any
	// write replaces).
	ftsWrites := func() string {
		q := `SELECT group_concat(id || ':' || hex(block), ',') FROM (SELECT * FROM videos_fts_data ORDER BY id)`
		if s.Engine() == PostgreSQL {
			q = `SELECT string_agg(video_rowid || ':' || xmin, ',' ORDER BY video_rowid) FROM video_search`
		}
		var fp string
		if err := s.db.QueryRow(q).Scan(&fp); err != nil {
			t.Fatal(err)
		}
		return fp
	}
	before := ftsWrites()

	vs2 := testVideos("u", 50)
	vs2[0].Title = "Original zebra title"
	for i := range vs2 {
		vs2[i].Views = i64(int64(5_000_000 + i))
	}
	t1 := t0.Add(2 * time.Hour)
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs2, At: t1}); err != nil {
		t.Fatal(err)
	}
	if after := ftsWrites(); after != before {
		t.Errorf("re-saving unchanged text wrote to the FTS index (%d -> %d bytes of fingerprint)", len(before), len(after))
	}
	v, _ := s.Video(ctx, "u-007")
	if *v.Views != 5_000_007 || !v.FirstSeen.Equal(t0) || !v.LastSeen.Equal(t1) {
		t.Errorf("after upsert: views %d first %v last %v", *v.Views, v.FirstSeen, v.LastSeen)
	}
	var rowid1 int64
	s.db.QueryRow(`SELECT rowid FROM videos WHERE id = 'u-000'`).Scan(&rowid1)
	if rowid0 != rowid1 {
		t.Errorf("upsert changed rowid %d -> %d", rowid0, rowid1)
	}

	// Change one title: searchable by the new one, not the old one; the
	// unchanged rest stays findable.
	vs2[0].Title = "Renamed giraffe title"
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs2, At: t1.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	hits := search(t, s, SearchQuery{Text: "giraffe"})
	if len(hits) != 1 || hits[0].VideoID != "u-000" {
		t.Errorf("new title: %+v", hits)
	}
	if hits := search(t, s, SearchQuery{Text: "zebra"}); len(hits) != 0 {
		t.Errorf("old title still found: %+v", hits)
	}
	if hits := search(t, s, SearchQuery{Text: "number 17"}); len(hits) != 1 || hits[0].VideoID != "u-017" {
		t.Errorf("unchanged video: %+v", hits)
	}

	// An older capture does not overwrite newer data.
	old := testVideos("u", 1)
	old[0].Title = "Stale capture"
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: old, At: t0}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Video(ctx, "u-000"); v.Title != "Renamed giraffe title" {
		t.Errorf("stale capture overwrote title: %q", v.Title)
	}
	ftsIntegrity(t, s)
}

func TestRuns(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		start := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
		id1, err := s.StartRun(ctx, Run{Credential: "proj", Region: "US", StartedAt: start, PID: 7, Host: "cron1"})
		if err != nil {
			t.Fatal(err)
		}
		id2 := startRun(t, s, "DE")
		retryAt := start.Add(3 * time.Hour)
		fin := Run{ID: id1, Outcome: OutcomeDenied, Reason: "quota: bucket units", FinishedAt: start.Add(time.Minute),
			Units: map[string]int64{"units": 3, "search": 0}, Unmetered: 1,
			ShadowDenials: map[string]map[string]int64{"new": {"videos.list": 2, "search.list": 1}},
			RetryAfter:    3*time.Hour + 500*time.Microsecond, RetryAt: retryAt}
		if err := s.FinishRun(ctx, fin); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Runs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].ID != id2 || runs[1].ID != id1 {
			t.Fatalf("runs order: %+v", runs)
		}
		r := runs[1]
		if r.Credential != "proj" || r.Region != "US" || !r.StartedAt.Equal(start) || !r.FinishedAt.Equal(fin.FinishedAt) ||
			r.Outcome != OutcomeDenied || r.Reason != fin.Reason || r.Unmetered != 1 ||
			!reflect.DeepEqual(r.Units, fin.Units) || !reflect.DeepEqual(r.ShadowDenials, fin.ShadowDenials) || r.RetryAfter != 3*time.Hour+time.Millisecond ||
			!r.RetryAt.Equal(retryAt) || r.PID != 7 || r.Host != "cron1" {
			t.Errorf("run = %+v", r)
		}
		if !runs[0].FinishedAt.IsZero() || runs[0].Outcome != OutcomeRunning || len(runs[0].Units) != 0 || runs[0].ShadowDenials != nil {
			t.Errorf("running run = %+v", runs[0])
		}
		checkShadowJSON(t, runs[0], `null`)
		checkShadowJSON(t, r, `{"new":{"search.list":1,"videos.list":2}}`)
		shadow := map[string]map[string]int64{"tight": {"videos.list": 1}}
		if err := s.RecordUsage(ctx, Run{ID: id2, ShadowDenials: shadow}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Runs(ctx, 1); len(got) != 1 || !reflect.DeepEqual(got[0].ShadowDenials, shadow) {
			t.Errorf("shadow denials recorded on a running run: %+v; want %v", got, shadow)
		}
		if got, _ := s.Runs(ctx, 1); len(got) != 1 {
			t.Errorf("limit 1 gave %d", len(got))
		}
		if err := s.FinishRun(ctx, Run{ID: id2, Outcome: "bogus"}); err == nil {
			t.Error("bogus outcome accepted")
		}
		if err := s.FinishRun(ctx, Run{ID: 999, Outcome: OutcomeSuccess}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown run: %v", err)
		}
	})
}

// checkShadowJSON checks r's shadow_denials in JSON.
func checkShadowJSON(t *testing.T, r Run, want string) {
	t.Helper()
	var got map[string]json.RawMessage
	if b, err := json.Marshal(r); err != nil || json.Unmarshal(b, &got) != nil || string(got["shadow_denials"]) != want {
		t.Errorf("run %d shadow_denials in JSON = %s (%v); want %s", r.ID, got["shadow_denials"], err, want)
	}
}

func TestCategories(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		at := time.Now()
		if err := s.UpsertCategories(ctx, "US", []Category{{ID: "10", Title: "Music", Assignable: true}, {ID: "1", Title: "Film"}}, at); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertCategories(ctx, "US", []Category{{ID: "1", Title: "Film & Animation", Assignable: true}}, at); err != nil {
			t.Fatal(err)
		}
		got, err := s.Categories(ctx, "US")
		want := []Category{{ID: "1", Title: "Film & Animation", Assignable: true}, {ID: "10", Title: "Music", Assignable: true}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Categories = %+v, %v", got, err)
		}
	})
}

// TestOpenOddPath: SQLite only (a file path).
func TestOpenOddPath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dir with space?#%25", "a?b#c%.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
}

// TestOpenReadOnly: the read-only open of a database that does not exist
// (or holds no schema) says so and creates nothing; of a migrated one, it
// reads and fails every write.
func TestOpenReadOnly(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, database string) {
		ctx := context.Background()
		_, err := OpenReadOnly(ctx, database)
		var nde *NoDatabaseError
		if !errors.As(err, &nde) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "trendfetch run") {
			t.Fatalf("missing db: %v", err)
		}
		if EngineOf(database) != PostgreSQL {
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(database)), "*")); len(m) != 0 {
				t.Errorf("OpenReadOnly created %v", m)
			}
		}
		s := openAt(t, database)
		run := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: testVideos("r", 3), At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ro := reopenReadOnly(t, s)
		if hits := search(t, ro, SearchQuery{Text: "number"}); len(hits) != 3 {
			t.Errorf("read-only search: %d hits", len(hits))
		}
		if runs, err := ro.RunsPage(ctx, RunsQuery{}); err != nil || len(runs) != 1 {
			t.Errorf("read-only RunsPage: %v %v", runs, err)
		}
		if _, err := ro.StartRun(ctx, Run{Region: "US"}); err == nil {
			t.Error("read-only store accepted a write")
		}
	})
}

// TestRunReasonIsCapped: an upstream error quoting a 7 MB answer is stored
// as at most MaxReasonBytes, marked as cut, cut on a character boundary; a
// reason stored whole before the bound is cut when read (issue 31 item 5).
func TestRunReasonIsCapped(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		huge := "youtube: 400 " + strings.Repeat("é", 7<<20/2)
		id := startRun(t, s, "US")
		if err := s.FinishRun(ctx, Run{ID: id, Outcome: OutcomeFailed, Reason: huge}); err != nil {
			t.Fatal(err)
		}
		var stored int
		if err := s.db.QueryRowContext(ctx, `SELECT octet_length(reason) FROM runs WHERE id = ?`, id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored > MaxReasonBytes {
			t.Errorf("stored reason is %d bytes, want at most %d", stored, MaxReasonBytes)
		}
		// A row written before the bound (or by another version) is cut when read.
		old := startRun(t, s, "US")
		if _, err := s.db.ExecContext(ctx, `UPDATE runs SET outcome = 'failed', reason = ? WHERE id = ?`, strings.Repeat("x", 5000), old); err != nil {
			t.Fatal(err)
		}
		short := startRun(t, s, "US")
		if err := s.FinishRun(ctx, Run{ID: short, Outcome: OutcomeFailed, Reason: strings.Repeat("y", MaxReasonBytes)}); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Runs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs[1:] {
			if len(r.Reason) > MaxReasonBytes || !utf8.ValidString(r.Reason) || !strings.HasSuffix(r.Reason, ReasonCut) {
				t.Errorf("run %d reason: %d bytes, valid UTF-8 %v, ends %q; want <= %d, valid, marked cut",
					r.ID, len(r.Reason), utf8.ValidString(r.Reason), r.Reason[max(0, len(r.Reason)-12):], MaxReasonBytes)
			}
		}
		if runs[0].Reason != strings.Repeat("y", MaxReasonBytes) {
			t.Errorf("a reason of exactly %d bytes was changed: %d bytes", MaxReasonBytes, len(runs[0].Reason))
		}
	})
}

// TestRunsPage: the region filter and the cursor (Before) are applied in
// the query, newest first (issue 31 item 5).
func TestRunsPage(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var us []int64
		for i := range 7 {
			region := "US"
			if i%2 == 1 {
				region = "DE"
			}
			id := startRun(t, s, region)
			if region == "US" {
				us = append(us, id)
			}
		}
		slices.Reverse(us)
		var got []int64
		before := int64(0)
		for range len(us) + 1 {
			page, err := s.RunsPage(ctx, RunsQuery{Region: "US", Before: before, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				got = append(got, r.ID)
			}
			if len(page) < 3 {
				break
			}
			before = page[len(page)-1].ID
		}
		if !slices.Equal(got, us) {
			t.Errorf("US runs paged 3 at a time: %v, want %v", got, us)
		}
		// A cursor past 32 bits is an id like any other (issue 40 item 3).
		if page, err := s.RunsPage(ctx, RunsQuery{Region: "US", Before: 3000000000}); err != nil || len(page) != len(us) {
			t.Errorf("RunsPage before 3000000000: %d runs, %v; want %d", len(page), err, len(us))
		}
	})
}

// TestHealth: a region's last success, the failures since it, its newest
// run, and the units of its runs started since the day's start only.
func TestHealth(t *testing.T) { forEachEngine(t, testHealth) }

func testHealth(t *testing.T, s *Store) {
	ctx := context.Background()
	day := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC) // midnight PST
	run := func(region string, started time.Time, o Outcome, reason string) {
		t.Helper()
		id, err := s.StartRun(ctx, Run{Credential: "p", Region: region, StartedAt: started, Units: map[string]int64{"units": 3}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, Run{ID: id, Outcome: o, Reason: reason, FinishedAt: started.Add(time.Minute), Units: map[string]int64{"units": 3}}); err != nil {
			t.Fatal(err)
		}
	}
	run("US", day.Add(-time.Hour), OutcomeFailed, "old")
	run("US", day.Add(-time.Minute), OutcomeSuccess, "")
	run("US", day.Add(time.Hour), OutcomeDenied, "quota")
	run("US", day.Add(2*time.Hour), OutcomeFailed, "boom")
	run("GB", day.Add(time.Hour), OutcomeFailed, "gb")
	run("US", day.Add(-2*time.Hour), OutcomeFailed, "copied") // the highest id, started first (issue 40 item 12)
	h, err := s.Health(ctx, "US", day)
	if err != nil {
		t.Fatal(err)
	}
	if h.LastSuccessAt == nil || !h.LastSuccessAt.Equal(day) || h.ConsecutiveFailures != 2 ||
		h.LastOutcome == nil || *h.LastOutcome != OutcomeFailed || h.LastReason == nil || *h.LastReason != "boom" || h.UnitsToday["units"] != 6 {
		t.Errorf("US health %+v (units %v), want last success at %s, 2 failures, last failed boom, 6 units today", h, h.UnitsToday, day)
	}
	if h, err = s.Health(ctx, "FR", day); err != nil || h.LastSuccessAt != nil || h.LastOutcome != nil || h.ConsecutiveFailures != 0 || len(h.UnitsToday) != 0 {
		t.Errorf("FR (no runs) health %+v, %v", h, err)
	}
}

// TestStatementCacheIsBounded: saving pages of every length from 1 to 50
// leaves one cached statement per multi-row statement kind, not one per
// length (issue 42: each length seen stayed prepared on each connection,
// and a scheduler's memory grew 30% over 1,000 runs).
func TestStatementCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	run := startRun(t, s, "US")
	for n := 1; n <= 50; n++ {
		p := Snapshot{RunID: run, Region: "US", Kind: KindSearch, Query: fmt.Sprint("q", n), FirstRank: 1, Videos: testVideos(fmt.Sprint("v", n), n)}
		if err := s.SaveSnapshot(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.stmts); n > 3 {
		t.Errorf("%d statements cached after pages of 1 to 50 videos, want one per kind (videos, stats, entries)", n)
	}
}
