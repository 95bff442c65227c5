// Package store is trendfetch's dataset (docs/design.md §5, §6): Backend,
// what every caller needs of a store, the types it reads and writes, the
// storage Policy (§10), and *Store, which implements Backend on SQLite
// (modernc.org/sqlite, opened and migrated by internal/sqlitedb from
// migrations/) and on PostgreSQL (postgres.go, §10a). Every write method is
// one transaction. Open for the run pipeline, OpenReadOnly for the reading
// commands.
package store
