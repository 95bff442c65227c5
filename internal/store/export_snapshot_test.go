package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestExportSnapshotUnderPrune (issue 21 item 7): a prune that deletes
// everything while an export runs changes nothing the export sees: it
// writes every row of the database as it was when it started.
func TestExportSnapshotUnderPrune(t *testing.T) {
	forEachEngine(t, testExportSnapshotUnderPrune)
}

func testExportSnapshotUnderPrune(t *testing.T, s *Store) {
	ctx := context.Background()
	const captures, per = 30, 20
	for c := 0; c < captures; c++ {
		run := startRun(t, s, "US")
		vs := testVideos("p", per)
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: vs, At: time.Date(2026, 1, 1+c, 0, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
	}
	other := reopen(t, s) // another process's handle, in effect
	rows, titles := 0, 0
	err := s.Export(ctx, ExportQuery{}, func(r *ExportRow) error {
		rows++
		if strings.HasPrefix(r.Title, "Video p number") {
			titles++
		}
		if rows == 1 {
			rep, err := other.Prune(ctx, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), false)
			if err != nil || rep.Captures != captures || rep.Videos != per {
				t.Errorf("prune during the export: %+v, %v", rep, err)
			}
		}
		return nil
	})
	if err != nil || rows != captures*per || titles != rows {
		t.Errorf("export during a prune: %d rows (%d with their text), %v; want %d", rows, titles, err, captures*per)
	}
	rows = 0
	if err := s.Export(ctx, ExportQuery{}, func(*ExportRow) error { rows++; return nil }); err != nil || rows != 0 {
		t.Errorf("export after the prune: %d rows, %v", rows, err)
	}
}

// TestExportSpreadsheetSafe (issue 21 item 8): --spreadsheet-safe prefixes
// cells that start with = + - @ tab or CR with '; the default writes them
// as they are. Descriptions keep CRLF (issue 23 item 5).
func TestExportSpreadsheetSafe(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		vs := testVideos("s", 6)
		for i, title := range []string{"=HYPERLINK(\"http://x\")", "+1", "-2RVw2", "@SUM(A1)", "\tTab", "\rCR"} {
			vs[i].Title = title
			vs[i].Description = "line one\r\nline two"
		}
		vs[2].ID = "-2RVw2_QyxQ"
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: vs}); err != nil {
			t.Fatal(err)
		}
		export := func(safe bool) string {
			var b bytes.Buffer
			w, err := NewExportWriter(&b, ExportFormat{Format: "csv", Layout: LayoutTrendingDaily, SpreadsheetSafe: safe})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Export(ctx, ExportQuery{}, w.Row); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			return b.String()
		}
		plain, safe := export(false), export(true)
		for _, want := range []string{"\"=HYPERLINK(\"\"http://x\"\")\"", ",+1,", "-2RVw2_QyxQ,-2RVw2,", ",@SUM(A1),", "\"\tTab\"", "\"\rCR\"", "\"line one\r\nline two\""} {
			if !strings.Contains(plain, want) {
				t.Errorf("default export lacks %q", want)
			}
		}
		for _, want := range []string{"\"'=HYPERLINK(\"\"http://x\"\")\"", ",'+1,", "'-2RVw2_QyxQ,'-2RVw2,", ",'@SUM(A1),", ",'\tTab,", "\"'\rCR\"", "\"line one\r\nline two\""} {
			if !strings.Contains(safe, want) {
				t.Errorf("--spreadsheet-safe export lacks %q", want)
			}
		}
	})
}
