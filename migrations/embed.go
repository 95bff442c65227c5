// Package migrations holds trendfetch's schema as numbered SQL files, NNNN_name.sql from 0001,
// which internal/sqlitedb validates and applies (each in one transaction; its first line may turn
// foreign keys off, see 0012). Never edit a released migration: add a new file.
package migrations

import "embed"

// FS holds every *.sql migration file at its root, e.g. "0001_init.sql".
//
//go:embed *.sql
var FS embed.FS

// PostgresFS holds the PostgreSQL schema, numbered on its own from
// "postgres/0001_init.sql" (docs/design.md §10a).
//
//go:embed postgres/*.sql
var PostgresFS embed.FS
