package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
)

// sqliteDialect is the embedded engine's (docs/design.md §6): one writer at
// a time (BEGIN IMMEDIATE), so the policy needs no lock of its own.
var sqliteDialect = &dialect{
	engine:    SQLite,
	callCount: `json_extract(calls, '$."' || ?1 || '"')`,
	check:     checkSQLite,
	scanTx:    scanTxSQLite,
	policyCache: [2][]string{{`PRAGMA cache_size = -2000`},
		{fmt.Sprintf(`PRAGMA cache_size = -%d`, WriterCacheKiB)}},
	captures: func(ctx context.Context, tx *sql.Tx, query string, args []any) (*captureList, error) {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		return &captureList{rows: rows}, nil
	},
	searcher:      newSQLiteSearcher,
	transient:     sqlitedb.Transient,
	onVideo:       func(x string) string { return "e.video = " + x },
	hitEntries:    `entries e ON e.video = v.rowid`,
	deleteEntries: `DELETE FROM entries WHERE capture_id IN ({ids})`,
	entries:       entriesSQLite,
	savePage: func(ctx context.Context, s *Store, stmts []stmt) error {
		return s.withTx(ctx, func(tx *sql.Tx) error { _, err := s.execStmts(ctx, tx, stmts); return err })
	},
	mergeOff: ftsAutomerge(0),
	mergeOn:  ftsAutomerge(4),
}

// entriesSQLite inserts a row per video of p (its rowid and current text version found by id).
func entriesSQLite(p Snapshot) []stmt {
	return p.entryArgs(rowStmts(p.Videos, func(n int) string {
		return `INSERT INTO entries (capture_id, rank, video, text, view_count, like_count, comment_count)
SELECT c.id, x.column1, v.rowid, v.text_version, x.column3, x.column4, x.column5
FROM (VALUES ` + valueRows(n, 5, 1, 3, 4, 5) + `) AS x JOIN videos v ON v.id = x.column2 JOIN captures c
    ON c.run_id = ? AND c.region = ? AND c.kind = ? AND c.query = ?`
	}, func(i int, v Video) []any {
		return []any{p.FirstRank + i, v.ID, nullInt(v.Views), nullInt(v.Likes), nullInt(v.Comments)}
	}))
}

// ftsAutomerge sets both FTS5 indexes' automerge to n (4: FTS5's default). Setting it first writes
// what the transaction has given the index so far: Prune's batches write their deletions with 0, so
// no batch merges them with the large segments a grown index has (that made prune superlinear,
// docs/scale.md), and set 4 back before they commit (the setting is stored in the database).
// Later writes merge as before.
func ftsAutomerge(n int) []string {
	return []string{
		fmt.Sprintf(`INSERT INTO videos_fts (videos_fts, rank) VALUES ('automerge', %d)`, n),
		fmt.Sprintf(`INSERT INTO videos_tri (videos_tri, rank) VALUES ('automerge', %d)`, n),
	}
}

// openSQLite opens the SQLite file at path (sqlitedb.Open: created and migrated unless readOnly).
func openSQLite(ctx context.Context, path string, readOnly bool) (*Store, error) {
	o := sqlitedb.Options{ReadOnly: readOnly, Migrations: migrationsFS}
	if readOnly {
		o.MmapBytes = ReadOnlyMmapBytes
	} else {
		o.CacheKiB = WriterCacheKiB
	}
	db, err := sqlitedb.Open(ctx, path, o)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path) // sqlitedb.Open succeeded with it
	return &Store{db: db, path: abs, d: sqliteDialect}, nil
}

// checkSQLite is SQLite's integrity and foreign key checks and both FTS5
// index checks (INSERTs: a writable Store).
func checkSQLite(ctx context.Context, db *sql.DB) error {
	problems, err := column[string](ctx, db, `PRAGMA integrity_check(20)`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if problems = slices.DeleteFunc(problems, func(m string) bool { return m == "ok" }); len(problems) > 0 {
		return fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
	}
	var table, parent string
	err = db.QueryRowContext(ctx, `SELECT "table", parent FROM pragma_foreign_key_check`).Scan(&table, &parent)
	switch {
	case err == nil:
		return fmt.Errorf("foreign key check failed: a row of %s refers to a missing row of %s", table, parent)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("foreign key check: %w", err)
	}
	// rank = 1: also compare the index with the content table (videos).
	for _, fts := range []string{"videos_fts", "videos_tri"} {
		if _, err := db.ExecContext(ctx,
			`INSERT INTO `+fts+` (`+fts+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			return fmt.Errorf("full-text index %s check failed: %w", fts, err)
		}
	}
	return nil
}

// scanTxSQLite is a deferred BEGIN (ReadOnly; the driver's _txlock=immediate would take the write
// lock: a read transaction is one snapshot) on conn without memory map (mapped pages count in the
// RSS) and with exportCacheKiB of page cache, both restored to the connection's after.
func scanTxSQLite(ctx context.Context, conn *sql.Conn) (*sql.Tx, func(), error) {
	const set = "PRAGMA cache_size = %d; PRAGMA mmap_size = %d"
	var cache, mmap int64
	err := conn.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache)
	if err == nil {
		err = conn.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mmap)
	}
	if err == nil {
		_, err = conn.ExecContext(ctx, fmt.Sprintf(set, -exportCacheKiB, 0))
	}
	var tx *sql.Tx
	if err == nil {
		tx, err = conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	}
	return tx, func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(set, cache, mmap)) }, err
}
