package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Category is one videoCategories.list item of a region.
type Category struct {
	ID    string
	Title string
	// Assignable reports whether uploads can be put in this category.
	Assignable bool
}

// UpsertCategories stores the categories of region in one transaction,
// replacing title/assignable of known ids and stamping fetched_at with at
// (zero means now). Categories missing from cats are kept.
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
			if _, err := st.ExecContext(ctx, region, c.ID, c.Title, c.Assignable, fmtTime(at)); err != nil {
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
// stored by UpsertCategories, an empty answer included, or the zero time if
// never. The pipeline refreshes them at most every categories.refresh.
func (s *Store) CategoriesFetchedAt(ctx context.Context, region string) (time.Time, error) {
	var ts sql.NullString
	if err := s.db.QueryRowContext(ctx,
		`SELECT max(fetched_at) FROM category_fetches WHERE region = ?`, region).Scan(&ts); err != nil {
		return time.Time{}, fmt.Errorf("cannot read categories of %s: %w", region, err)
	}
	return parseTime(ts), nil
}
