package store

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"
	"testing/fstest"
)

// TestEntryBytesPG: the same day of 20 regions' charts takes at most twice SQLite's bytes per
// entry on PostgreSQL (issue 42; a row per entry took 3.3x).
func TestEntryBytesPG(t *testing.T) {
	lite, _ := openTest(t)
	var bytes [2]float64
	for i, s := range []*Store{lite, openPG(t)} {
		if _, err := growCharts(s, 1); err != nil {
			t.Fatal(err)
		}
		bytes[i] = entryBytes(t, s)
	}
	if bytes[1] > 2*bytes[0] {
		t.Errorf("bytes per entry: PostgreSQL %.1f, SQLite %.1f: more than 2x", bytes[1], bytes[0])
	}
}

// TestMigrateEntryPagesPG: 0005 moves a version 4 database's entries into pages, runs of
// consecutive ranks cut at each 50, and the entries view reads back every row as it was.
func TestMigrateEntryPagesPG(t *testing.T) {
	ctx := context.Background()
	url := pgURL(t)
	v4 := fstest.MapFS{}
	for _, name := range []string{"0001_init.sql", "0002_search.sql", "0003_runs_started.sql", "0004_runs_shadow_denials.sql"} {
		b, err := fs.ReadFile(postgresFS, name)
		if err != nil {
			t.Fatal(err)
		}
		v4[name] = &fstest.MapFile{Data: b}
	}
	all := postgresFS
	postgresFS = v4
	old := openAt(t, url)
	postgresFS = all
	const rows = `SELECT capture_id, rank, video, view_count, like_count, comment_count, text FROM entries ORDER BY 1, 2`
	for _, q := range []string{
		`INSERT INTO runs (id, region, started_at, outcome) VALUES (1, 'JP', 'x', 'success')`,
		`INSERT INTO videos (id, title, first_seen_at) SELECT 'v' || i, '', 'x' FROM generate_series(1, 3) i`,
		`INSERT INTO captures (id, run_id, region, kind, query, captured_at) VALUES (1, 1, 'JP', 'chart', '', 'x'), (2, 1, 'JP', 'search', 'q', 'x')`,
		// Capture 1: ranks 1-120 but 60; capture 2: rank 7 alone, no statistics.
		`INSERT INTO entries SELECT 1, r, 1 + r % 3, r * 10, CASE WHEN r % 2 = 0 THEN r END, 5, r % 2
		 FROM generate_series(1, 120) r WHERE r <> 60`,
		`INSERT INTO entries (capture_id, rank, video) VALUES (2, 7, 3)`,
	} {
		if _, err := old.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	want := dumpRows(t, old.db, rows)
	s := openAt(t, url)
	if got := dumpRows(t, s.db, rows); got != want {
		t.Errorf("entries after the migration:\n%s\nwant\n%s", got, want)
	}
	pages := dumpRows(t, s.db, `SELECT capture_id, first_rank, cardinality(video) FROM entry_pages ORDER BY 1, 2`)
	if want := "1 1 50\n1 51 9\n1 61 40\n1 101 20\n2 7 1\n"; pages != want {
		t.Errorf("pages (capture, first rank, entries):\n%s\nwant\n%s", pages, want)
	}
}

// dumpRows is query's rows, fields space-separated, a line each.
func dumpRows(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	var out string
	err := each(context.Background(), db, query, nil, func(rows *sql.Rows) error {
		cols, _ := rows.Columns()
		vals, ptrs := make([]sql.NullString, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if i > 0 {
				out += " "
			}
			out += v.String
			if !v.Valid {
				out += "NULL"
			}
		}
		out += "\n"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
