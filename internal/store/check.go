package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Check verifies the database and returns an error naming the first
// problems found: on SQLite PRAGMA integrity_check, foreign_key_check and
// FTS5's integrity-check of both search indexes (reading the whole file;
// a writable Store, as FTS5 checks are INSERTs); on PostgreSQL, which
// enforces constraints as it writes, that video_search matches every
// video's current text.
func (s *Store) Check(ctx context.Context) error {
	if s.pg {
		var stale int64
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM videos v LEFT JOIN video_search x ON x.video_rowid = v.rowid
WHERE x.doc IS DISTINCT FROM search_doc(v.title, v.channel_title, v.tags, v.description)
   OR x.tri IS DISTINCT FROM search_fold(v.title || E'\n' || v.channel_title)`).Scan(&stale); err != nil {
			return fmt.Errorf("search index check: %w", err)
		}
		if stale > 0 {
			return fmt.Errorf("search index video_search check failed: %d videos not indexed as their text is", stale)
		}
		return nil
	}
	problems, err := column[string](ctx, s.db, `PRAGMA integrity_check(20)`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if problems = slices.DeleteFunc(problems, func(m string) bool { return m == "ok" }); len(problems) > 0 {
		return fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
	}

	var table, parent string
	var rowid, fkid any
	err = s.db.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&table, &rowid, &parent, &fkid)
	switch {
	case err == nil:
		return fmt.Errorf("foreign key check failed: a row of %s refers to a missing row of %s", table, parent)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("foreign key check: %w", err)
	}

	// rank = 1: also compare the index with the content table (videos).
	for _, fts := range []string{"videos_fts", "videos_tri"} {
		if _, err := s.db.ExecContext(ctx,
			`INSERT INTO `+fts+` (`+fts+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			return fmt.Errorf("full-text index %s check failed: %w", fts, err)
		}
	}
	return nil
}
