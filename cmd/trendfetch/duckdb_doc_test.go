package main

import (
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// dataDoc is the page whose DuckDB examples TestDataDocDuckDBExamples runs.
const dataDoc = "../../docs/data.md"

// docSQL returns the statement of docs/data.md's indented code that begins
// with prefix, its lines joined up to the one ending with ";".
func docSQL(t *testing.T, prefix string) string {
	t.Helper()
	raw, err := os.ReadFile(dataDoc)
	if err != nil {
		t.Fatal(err)
	}
	var stmt []string
	for _, line := range strings.Split(string(raw), "\n") {
		code, ok := strings.CutPrefix(line, "    ")
		switch {
		case len(stmt) == 0 && (!ok || !strings.HasPrefix(code, prefix)):
			continue
		case !ok:
			t.Fatalf("%s: the statement %q... does not end with ;", dataDoc, prefix)
		}
		stmt = append(stmt, code)
		if strings.HasSuffix(code, ";") {
			return strings.Join(stmt, "\n")
		}
	}
	t.Fatalf("%s has no statement beginning %q", dataDoc, prefix)
	return ""
}

// TestDataDocDuckDBExamples runs docs/data.md's DuckDB examples on a real
// store: the read_parquet query on a partitioned Parquet export, with
// DuckDB (its Node.js client, as an analyst would); and the query that
// follows its ATTACH ... (TYPE sqlite) on the database file, with
// SQLite and without the tf. prefix, since DuckDB's sqlite extension is
// downloaded on first use and CI has no access to it (the page says so).
func TestDataDocDuckDBExamples(t *testing.T) {
	e := newEnv(t)
	dir := partitionedExport(t, e, "export")
	q := docSQL(t, "SELECT region, date, count(*) FROM read_parquet(")
	if !strings.Contains(q, "'export/") {
		t.Fatalf("docs/data.md's read_parquet query no longer reads export/: %s", q)
	}
	rows := strings.Split(strings.TrimSpace(storetest.DuckDB(t, strings.ReplaceAll(q, "'export/", "'"+dir))), "\n")
	slices.Sort(rows)
	want := []string{`["GB","2026-11-01T00:00:00.000Z","4800"]`, `["GB","2026-11-02T00:00:00.000Z","1200"]`,
		`["US","2026-11-01T00:00:00.000Z","4800"]`, `["US","2026-11-02T00:00:00.000Z","1200"]`}
	if !slices.Equal(rows, want) {
		t.Errorf("docs/data.md's read_parquet query:\n%s\ngot  %q\nwant %q", q, rows, want)
	}

	if a := docSQL(t, "ATTACH 'trendfetch.db' AS tf"); !strings.Contains(a, "(TYPE sqlite, READ_ONLY)") {
		t.Errorf("docs/data.md's ATTACH changed: %s", a)
	}
	q = docSQL(t, "SELECT c.region, c.captured_at, e.rank, v.id, e.view_count")
	db, err := sql.Open("sqlite", "file:"+e.dbPath()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Query(strings.ReplaceAll(q, "tf.", ""))
	if err != nil {
		t.Fatalf("docs/data.md's query of the attached database, on SQLite:\n%s\n%v", q, err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		var region, at, id string
		var rank, views int64
		if err := r.Scan(&region, &at, &rank, &id, &views); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := r.Err(); err != nil || n != 20 {
		t.Errorf("docs/data.md's query of the attached database: %d rows, %v; want 20", n, err)
	}
}
