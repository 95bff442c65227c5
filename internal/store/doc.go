// Package store is trendfetch's dataset (docs/design.md §5, §6): Backend,
// what every caller needs of a store, the types it reads and writes, the
// storage Policy (§10), and *Store, which implements Backend on SQLite
// (modernc.org/sqlite, opened and migrated by internal/sqlitedb from
// migrations/) and on PostgreSQL (postgres.go, §10a). Every write method is
// one transaction.
//
// Typical use by the run pipeline:
//
//	st, err := store.Open(ctx, path) // creates the file, applies migrations
//	id, err := st.StartRun(ctx, store.Run{Region: "US", ...})
//	err = st.SaveSnapshot(ctx, store.Snapshot{RunID: id, Region: "US", FirstRank: 1, Videos: page})
//	err = st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeSuccess, ...})
//
// and by the read-only commands:
//
//	st, err := store.OpenReadOnly(ctx, path) // *NoDatabaseError if missing
//	hits, next, err := st.SearchPage(ctx, store.SearchQuery{Text: "lofi beats"})
package store
