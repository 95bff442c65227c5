// Package migrations holds trendfetch's SQLite schema as numbered SQL files
// and exports them as an embed.FS for internal/store (internal/sqlitedb
// validates and applies them).
//
// Files are named NNNN_name.sql (four digits, lower-case snake_case name),
// numbered contiguously from 0001. Each file is applied, together with its
// row in schema_migrations, in one transaction. Never edit a released
// migration: add a new file instead. The store refuses to open a database
// whose schema version is newer than the highest file here. A file whose
// first line is "-- sqlitedb: foreign_keys off" runs with foreign keys off
// and every reference checked before it commits: the way to rebuild a table
// other tables refer to (see 0012).
package migrations

import "embed"

// FS holds every *.sql migration file at its root, e.g. "0001_init.sql".
//
//go:embed *.sql
var FS embed.FS

// PostgresFS holds the PostgreSQL schema, numbered on its own from
// "postgres/0001_init.sql" (docs/design.md §10a): equal to the SQLite
// schema after its migrations, without search.
//
//go:embed postgres/*.sql
var PostgresFS embed.FS
