package store

// Store methods only tests use.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
)

// Search is SearchPage without the next page's offset.
func (s *Store) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	hits, _, err := s.SearchPage(ctx, q)
	return hits, err
}

// Categories returns the stored categories of region ordered by id (as
// text); empty when none were fetched.
func (s *Store) Categories(ctx context.Context, region string) ([]Category, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT id, title, assignable FROM categories WHERE region = ? ORDER BY id`, region)
	if err != nil {
		return nil, fmt.Errorf("cannot read categories: %w", err)
	}
	defer rows.Close()
	var out []Category
	for rows.Next() {
		var c Category
		if err := rows.Scan(&c.ID, &c.Title, &c.Assignable); err != nil {
			return nil, fmt.Errorf("cannot read categories: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Channel returns the stored channel with the given id, or an error
// wrapping ErrNotFound.
func (s *Store) Channel(ctx context.Context, id string) (StoredChannel, error) {
	var (
		c                 StoredChannel
		subs, vids, views sql.NullInt64
		fetched           sql.NullString
	)
	err := s.db.QueryRowContext(ctx, `
SELECT id, title, country, subscriber_count, video_count, view_count, fetched_at
FROM channels WHERE id = ?`, id).Scan(&c.ID, &c.Title, &c.Country, &subs, &vids, &views, &fetched)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredChannel{}, fmt.Errorf("channel %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return StoredChannel{}, fmt.Errorf("cannot read channel %s: %w", id, err)
	}
	c.Subscribers, c.Videos, c.Views = intPtr(subs), intPtr(vids), intPtr(views)
	c.FetchedAt = parseTime(fetched)
	return c, nil
}

// StoredChannel is a Channel with the time it was fetched.
type StoredChannel struct {
	Channel
	FetchedAt time.Time
}

// KnownVideos returns the set of ids among ids that are stored in videos
// (map value true; unknown ids are absent). Any number of ids is accepted
// (queried in chunks of 500, one index lookup per id).
func (s *Store) KnownVideos(ctx context.Context, ids []string) (map[string]bool, error) {
	known, err := s.existing(ctx, `SELECT id FROM videos WHERE id IN `, nil, ids)
	if err != nil {
		return nil, fmt.Errorf("cannot look up videos: %w", err)
	}
	return known, nil
}

// SchemaVersion returns the database's schema version (the highest applied
// migration number) and the version this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (have, want int, err error) {
	schema, version := migrationsFS, sqlitedb.Version
	if s.Engine() == PostgreSQL {
		schema, version = postgresFS, postgresVersion
	}
	migs, err := sqlitedb.Migrations(schema)
	if err != nil {
		return 0, 0, err
	}
	have, err = version(ctx, s.db)
	return have, len(migs), err
}
