package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// Channel is one channels.list item (snippet, statistics).
type Channel struct {
	// ID is the YouTube channel id (UC...); required.
	ID    string
	Title string
	// Country is snippet.country (ISO 3166-1 alpha-2), "" when not set.
	Country string
	// Subscribers, Videos and Views are nil when the API hides or omits
	// them (statistics.hiddenSubscriberCount, no statistics part).
	Subscribers, Videos, Views *int64
}

// maxIDsPerQuery bounds the ids bound into one IN (...) list (SQLite
// allows 32766 parameters; smaller lists keep each statement cheap).
const maxIDsPerQuery = 500

// upsertChannelsSQL upserts n channels in one statement, 7 parameters
// each. An older fetch does not overwrite a newer one.
func upsertChannelsSQL(n int) string {
	return `INSERT INTO channels (id, title, country, subscriber_count, video_count, view_count, fetched_at)
VALUES ` + valueRows(n, 7) + `
ON CONFLICT (id) DO UPDATE SET
    title            = excluded.title,
    country          = excluded.country,
    subscriber_count = excluded.subscriber_count,
    video_count      = excluded.video_count,
    view_count       = excluded.view_count,
    fetched_at       = excluded.fetched_at
WHERE excluded.fetched_at >= channels.fetched_at`
}

// UpsertChannels stores chs (the last of an id wins; one without ID fails
// it) in one transaction, fetched at at (zero: now), keeping a channel
// fetched later. Channel{ID: id} records one channels.list did not return.
func (s *Store) UpsertChannels(ctx context.Context, chs []Channel, at time.Time) error {
	if i := slices.IndexFunc(chs, func(c Channel) bool { return c.ID == "" }); i >= 0 {
		return fmt.Errorf("cannot store channels: channel %d of %d has no id", i+1, len(chs))
	}
	if len(chs) == 0 {
		return nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	ts := fmtTime(at)
	uniq := lastByID(chs, func(c *Channel) string { return c.ID }) // as videoStmts
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		_, err := s.execStmts(ctx, tx, rowStmts(uniq, upsertChannelsSQL, func(_ int, c *Channel) []any {
			return []any{c.ID, noNUL(c.Title), noNUL(c.Country), nullInt(c.Subscribers), nullInt(c.Videos), nullInt(c.Views), ts}
		}))
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot store channels: %w", err)
	}
	return nil
}

// StaleChannels returns the ids among ids (any number) not stored or fetched before olderThan, in
// input order without duplicates or empty ids; nil when every channel is fresh.
func (s *Store) StaleChannels(ctx context.Context, ids []string, olderThan time.Time) ([]string, error) {
	fresh, err := s.existing(ctx,
		`SELECT id FROM channels WHERE fetched_at >= ? AND id IN `, []any{fmtTime(olderThan)}, ids)
	if err != nil {
		return nil, fmt.Errorf("cannot find stale channels: %w", err)
	}
	var out []string
	for _, id := range ids {
		if id != "" && !fresh[id] {
			fresh[id] = true // once
			out = append(out, id)
		}
	}
	return out, nil
}

// existing runs prefix + "(?,?,...)" over ids in chunks, with args bound
// before the ids, and returns the set of the first column's values.
func (s *Store) existing(ctx context.Context, prefix string, args []any, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	for chunk := range slices.Chunk(ids, maxIDsPerQuery) {
		a := slices.Clone(args)
		for _, id := range chunk {
			a = append(a, id)
		}
		found, err := column[string](ctx, s.db, prefix+valueRows(1, len(chunk)), a...)
		if err != nil {
			return nil, err
		}
		for _, id := range found {
			out[id] = true
		}
	}
	return out, nil
}

// Category is one videoCategories.list item of a region.
type Category struct {
	ID    string
	Title string
	// Assignable reports whether uploads can be put in this category.
	Assignable bool
}

// UpsertCategories stores the categories of region in one transaction,
// stamped fetched_at at (zero: now); categories missing from cats are kept.
func (s *Store) UpsertCategories(ctx context.Context, region string, cats []Category, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `
INSERT INTO categories (region, id, title, assignable, fetched_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (region, id) DO UPDATE SET
    title = excluded.title, assignable = excluded.assignable, fetched_at = excluded.fetched_at`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, c := range cats {
			if _, err := st.ExecContext(ctx, region, c.ID, noNUL(c.Title), c.Assignable, fmtTime(at)); err != nil {
				return err
			}
		}
		// The fetch is recorded even when the answer was empty.
		_, err = tx.ExecContext(ctx, `
INSERT INTO category_fetches (region, fetched_at) VALUES (?, ?)
ON CONFLICT (region) DO UPDATE SET fetched_at = excluded.fetched_at`, region, fmtTime(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot store categories of %s: %w", region, err)
	}
	return nil
}

// CategoriesFetchedAt returns when the categories of region were last
// stored (an empty answer included), or the zero time if never.
func (s *Store) CategoriesFetchedAt(ctx context.Context, region string) (time.Time, error) {
	var ts sql.NullString
	if err := s.db.QueryRowContext(ctx,
		`SELECT max(fetched_at) FROM category_fetches WHERE region = ?`, region).Scan(&ts); err != nil {
		return time.Time{}, fmt.Errorf("cannot read categories of %s: %w", region, err)
	}
	return parseTime(ts), nil
}
