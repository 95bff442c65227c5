// Package store is trendfetch's dataset: Backend, what every caller needs
// of a store, the types it reads and writes, the storage Policy, and
// *Store, its SQLite implementation (opened and migrated by
// internal/sqlitedb from the files in migrations/): video upserts, chart,
// category and search-hit captures with their statistics, channels, run
// records, categories and FTS5 search (docs/design.md §5, §6).
//
// It uses modernc.org/sqlite (pure Go) in WAL mode with a busy timeout and
// BEGIN IMMEDIATE write transactions (see sqlitedb), so that several cron
// processes may write to one file at once without "database is locked"
// errors. Every write method is one transaction.
//
// Typical use by the run pipeline:
//
//	st, err := store.Open(ctx, path) // creates the file, applies migrations
//	id, err := st.StartRun(ctx, store.Run{Region: "US", ...})
//	n, err := st.AbandonRuns(ctx, cred, "US", started) // under the region's lease
//	err = st.SaveSnapshot(ctx, store.Snapshot{RunID: id, Region: "US", FirstRank: 1, Videos: page}) // per chart page
//	err = st.SaveSnapshot(ctx, store.Snapshot{RunID: id, Region: "US", Kind: store.KindSearch, Query: q, FirstRank: 1, Videos: hits})
//	stale, err := st.StaleChannels(ctx, channelIDs, time.Now().Add(-24*time.Hour))
//	err = st.UpsertChannels(ctx, channels, time.Now())
//	at, err := st.CategoriesFetchedAt(ctx, "US") // refresh weekly
//	err = st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeSuccess, ...})
//
// and by the read-only commands:
//
//	st, err := store.OpenReadOnly(ctx, path) // *NoDatabaseError if missing
//	hits, err := st.Search(ctx, store.SearchQuery{Text: "lofi beats"})
//
// Search text is translated by ParseQuery into an FTS5 expression that is
// bound as a parameter, never interpolated into SQL. Two external-content
// FTS5 indexes over videos, kept in sync by guarded triggers, answer it: a
// word index (unicode61: title, tags, channel title, description) and a
// trigram index (title, channel title) for Japanese, Chinese, Korean, Thai
// and for parts of words; Search documents which one answers a query.
//
// Video text is kept as captured: each change is a new version (the
// current one in videos, older ones in video_texts) and each capture entry
// refers to the version it saw, so Export (CSV, JSON Lines, Parquet; one
// read snapshot) writes every row with the text of its capture. Retention
// follows the storage policy (Policy, Prune; docs/design.md §10).
//
// Check verifies the file and both indexes, for reliability tests and
// operators.
package store
