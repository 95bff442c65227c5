// Package store is trendfetch's dataset (docs/design.md §5, §6): *Store, the types it reads and
// writes, the roles its consumers use (RunStore, Reader, Retention), and the storage Policy (§10).
// One *Store serves both engines (§10a): SQLite through internal/sqlitedb, PostgreSQL through pgx's
// database/sql driver; the SQL is shared, and what differs is a dialect value chosen at open, in
// the *_sqlite.go and *_pg.go files. Every write method is one transaction.
package store
