// Package store is trendfetch's SQLite database: schema migrations, video
// upserts, chart snapshots, run records, categories and FTS5 search
// (DESIGN.md §5, §6).
//
// It uses modernc.org/sqlite (pure Go) in WAL mode with a busy timeout and
// BEGIN IMMEDIATE write transactions, so that several cron processes may
// write to one file at once without "database is locked" errors. Every write
// method is one transaction.
//
// Typical use by the run pipeline:
//
//	st, err := store.Open(ctx, path) // creates the file, applies migrations
//	id, err := st.StartRun(ctx, store.Run{Region: "US", ...})
//	err = st.SavePage(ctx, id, "US", 1, videos, time.Now()) // per page
//	err = st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeSuccess, ...})
//
// and by the read-only commands:
//
//	st, err := store.OpenReadOnly(ctx, path) // *NoDatabaseError if missing
//	hits, err := st.Search(ctx, store.SearchQuery{Text: "lofi beats"})
//
// Search text is translated by ParseQuery into an FTS5 expression that is
// bound as a parameter, never interpolated into SQL.
package store
