// Package store is trendfetch's dataset (docs/design.md §5, §6): Backend, the
// types it reads and writes, the storage Policy (§10), and *Store, which
// implements Backend on SQLite (through internal/sqlitedb) and on PostgreSQL
// (§10a: pgx's database/sql driver, the SQL shared; what differs is in
// postgres.go and where Store.pg is asked). Every write method is one transaction.
package store
