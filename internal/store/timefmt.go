package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// tsLayout is how timestamps are stored: UTC, fixed width, microseconds, so
// text order is time order.
const tsLayout = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(tsLayout) }

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return fmtTime(t)
}

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// parseTime reads a stored timestamp; NULL or unparsable text is the zero time.
func parseTime(ns sql.NullString) time.Time {
	if !ns.Valid || ns.String == "" {
		return time.Time{}
	}
	t, err := time.Parse(tsLayout, ns.String)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, ns.String); err != nil {
			return time.Time{}
		}
	}
	return t.UTC()
}

func intPtr(ni sql.NullInt64) *int64 {
	if !ni.Valid {
		return nil
	}
	v := ni.Int64
	return &v
}

// querier is *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// each runs query and calls fn on every row, stopping at fn's first error.
func each(ctx context.Context, q querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// column returns the first column of every row of query (nil on error).
func column[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	var out []T
	err := each(ctx, q, query, args, func(r *sql.Rows) error {
		var v T
		out = append(out, v)
		return r.Scan(&out[len(out)-1])
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseAt reads a point in time as the CLI (--at, --until) and the read
// API (?at=) take it: an RFC 3339 time (2026-03-02T08:00:00Z), or a UTC date
// (2026-03-02) meaning the end of that day. The result is UTC.
func ParseAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.Add(24*time.Hour - time.Microsecond), nil
	}
	return time.Time{}, errors.New("want an RFC 3339 time (2026-03-02T08:00:00Z) or a date (2026-03-02)")
}

// jsonTime is t in UTC, or nil (JSON null) for the zero time.
func jsonTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
