package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestLoadMigrationsValidation(t *testing.T) {
	tests := map[string]fstest.MapFS{
		"gap":      {"0001_a.sql": file("SELECT 1"), "0003_c.sql": file("SELECT 1")},
		"not one":  {"0002_b.sql": file("SELECT 1")},
		"bad name": {"0001_a.sql": file("SELECT 1"), "2_b.sql": file("SELECT 1")},
		"upper":    {"0001_Init.sql": file("SELECT 1")},
		"other":    {"0001_a.sql": file("SELECT 1"), "README.md": file("x")},
		"empty":    {"0001_a.sql": file("")},
		"none":     {},
		"dup":      {"0001_a.sql": file("SELECT 1"), "0001_b.sql": file("SELECT 1")},
	}
	for name, fsys := range tests {
		if _, err := Migrations(fsys); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), Options{Migrations: fsys}); err == nil {
			t.Errorf("%s: Open accepted it", name)
		}
	}
	migs, err := Migrations(fstest.MapFS{"0002_b.sql": file("B"), "0001_a.sql": file("A")})
	if err != nil || len(migs) != 2 || migs[0].SQL != "A" || migs[1].Name != "0002_b.sql" {
		t.Errorf("valid set: %+v, %v", migs, err)
	}
}

// TestMigrate: a fresh file gets every migration with its row; a newer set
// adds only its own; an older binary (fewer files) refuses the database;
// a read-only open wants the schema exactly current.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "m.db")
	v1 := fstest.MapFS{"0001_a.sql": file("CREATE TABLE a (x); INSERT INTO a VALUES (1);")}
	v2 := fstest.MapFS{"0001_a.sql": v1["0001_a.sql"], "0002_b.sql": file("CREATE TABLE b (y)")}
	db, err := Open(ctx, path, Options{Migrations: v1})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, %v; want 0700", fi.Mode(), err)
	}
	if _, err := Open(ctx, path, Options{ReadOnly: true, Migrations: v2}); !isVersion(err, 1, 2) {
		t.Errorf("read-only open of an older schema: %v", err)
	}
	for range 2 { // the second open finds nothing to do
		db, err = Open(ctx, path, Options{Migrations: v2})
		if err != nil {
			t.Fatal(err)
		}
		var rows, a int
		db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&rows)
		db.QueryRow(`SELECT count(*) FROM a`).Scan(&a)
		if v, err := Version(ctx, db); v != 2 || err != nil || rows != 2 || a != 1 {
			t.Errorf("version %d (%v), %d rows, a has %d", v, err, rows, a)
		}
		var mode string
		if db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); mode != "wal" {
			t.Errorf("journal_mode %q", mode)
		}
		db.Close()
	}
	if _, err := Open(ctx, path, Options{Migrations: v1}); !isVersion(err, 2, 1) || !strings.Contains(err.Error(), "upgrade") {
		t.Errorf("older binary: %v", err)
	}
	ro, err := Open(ctx, path, Options{ReadOnly: true, Migrations: v2})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Exec(`INSERT INTO a VALUES (2)`); err == nil {
		t.Error("read-only handle wrote")
	}
}

func isVersion(err error, have, want int) bool {
	var sve *SchemaVersionError
	return errors.As(err, &sve) && sve.Have == have && sve.Want == want
}

func TestMigrationFailureRollsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	_, err := Open(ctx, path, Options{Migrations: fstest.MapFS{
		"0001_a.sql": file("CREATE TABLE a (x)"),
		"0002_b.sql": file("CREATE TABLE b (x); SELECT * FROM nosuchtable"),
	}})
	if err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("broken migration: %v", err)
	}
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := Version(ctx, db); v != 1 {
		t.Errorf("version = %d, want 1", v)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'b'`).Scan(&n)
	if n != 0 {
		t.Error("half-applied migration left table b")
	}
}

// TestNotRegularFile: /dev/null, a directory and a named pipe are refused
// with a *PathError before SQLite touches them (it used to create
// /dev/null-journal; a pipe would block the open).
func TestNotRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, journalErr := os.Stat("/dev/null-journal")
	for _, path := range []string{os.DevNull, dir, fifo} {
		for _, ro := range []bool{false, true} {
			_, err := Open(context.Background(), path, Options{ReadOnly: ro, Migrations: fstest.MapFS{"0001_a.sql": file("CREATE TABLE a (x)")}})
			var pe *PathError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s (read-only %v): %v", path, ro, err)
			}
		}
	}
	if _, err := os.Stat("/dev/null-journal"); err == nil && journalErr != nil {
		t.Error("created /dev/null-journal")
	}
}

// TestReadOnlyCreatesNothing: a read-only open of a missing file is a
// *NoDatabaseError and leaves no file or directory behind.
func TestReadOnlyCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(context.Background(), filepath.Join(dir, "sub", "x.db"), Options{ReadOnly: true})
	var nde *NoDatabaseError
	if !errors.As(err, &nde) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("read-only open created %v", m)
	}
}

// TestMigrationWithForeignKeysOff: a migration whose first line is
// foreignKeysOff rebuilds a table that another references (new table, copy,
// drop, rename), which with foreign keys on fails at the drop; one that
// leaves a dangling reference fails and rolls back; every connection keeps
// enforcing foreign keys afterwards.
func TestMigrationWithForeignKeysOff(t *testing.T) {
	ctx := context.Background()
	base := fstest.MapFS{"0001_a.sql": file(`CREATE TABLE p (id INTEGER PRIMARY KEY, o TEXT CHECK (o IN ('a')));
CREATE TABLE c (p INTEGER NOT NULL REFERENCES p (id));
INSERT INTO p VALUES (1, 'a'); INSERT INTO c VALUES (1);`)}
	rebuild := `CREATE TABLE p_new (id INTEGER PRIMARY KEY, o TEXT CHECK (o IN ('a', 'b')));
INSERT INTO p_new SELECT * FROM p;
DROP TABLE p;
ALTER TABLE p_new RENAME TO p;`
	with := func(sql string) fstest.MapFS {
		return fstest.MapFS{"0001_a.sql": base["0001_a.sql"], "0002_b.sql": file(sql)}
	}
	dir := t.TempDir()
	if _, err := Open(ctx, filepath.Join(dir, "on.db"), Options{Migrations: with(rebuild)}); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Errorf("rebuild of a referenced table with foreign keys on: %v, want a FOREIGN KEY failure", err)
	}
	dangling := filepath.Join(dir, "dangling.db")
	if _, err := Open(ctx, dangling, Options{Migrations: with(foreignKeysOff + "DELETE FROM p;")}); err == nil || !strings.Contains(err.Error(), "rows of c") {
		t.Errorf("dangling reference: %v, want a failure naming c", err)
	}
	if db, err := Open(ctx, dangling, Options{}); err != nil {
		t.Fatal(err)
	} else {
		var n int
		db.QueryRow(`SELECT count(*) FROM p`).Scan(&n)
		if v, _ := Version(ctx, db); v != 1 || n != 1 {
			t.Errorf("failed migration: version %d, %d rows in p; want 1 and 1 (rolled back)", v, n)
		}
		db.Close()
	}
	db, err := Open(ctx, filepath.Join(dir, "off.db"), Options{Migrations: with(foreignKeysOff + rebuild)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO p VALUES (2, 'b')`); err != nil {
		t.Errorf("the rebuilt table's CHECK: %v", err)
	}
	db.SetMaxIdleConns(4)
	conns := make([]*sql.Conn, 4) // the migration's connection among them
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
		if _, err := conns[i].ExecContext(ctx, `INSERT INTO c VALUES (99)`); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Errorf("connection %d: a dangling insert gave %v, want a FOREIGN KEY failure", i, err)
		}
	}
}
