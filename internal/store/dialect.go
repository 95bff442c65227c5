package store

import (
	"context"
	"database/sql"
	"strings"
)

// Engine names a store's database engine.
type Engine string

// The store's engines: the embedded SQLite file (one host) and PostgreSQL
// (several hosts or web nodes sharing one dataset, docs/design.md §10a).
const (
	SQLite     Engine = "SQLite"
	PostgreSQL Engine = "PostgreSQL"
)

// EngineOf is the engine a database setting names: PostgreSQL for a
// postgres:// or postgresql:// URL, else SQLite (a file path). It is how
// every caller learns the engine without opening the store.
func EngineOf(database string) Engine {
	if strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://") {
		return PostgreSQL
	}
	return SQLite
}

// dialect is what differs between the engines, chosen once at open: sqliteDialect
// (dialect_sqlite.go) or pgDialect (dialect_pg.go). The SQL shared by both is written once
// (SQLite's placeholders, rebound on PostgreSQL); what is not is here, as fragments and behaviours.
type dialect struct {
	engine Engine
	// callCount is the SQL count of calls of method ?1 in runs.calls.
	callCount string
	// pickLocked follows the SELECT that picks the rows of a table ({table}) a storage policy batch
	// deletes: "" or a lock that skips rows another host's batch holds.
	pickLocked string
	// sampleLock follows the SELECT of insertSamplesSQL: "" or a lock that
	// skips a video being deleted.
	sampleLock string
	// mergeOff and mergeOn come before and after the writes of each batch of Prune deleting videos
	// (nil: none): the full-text indexes write what it deletes without merging their segments.
	mergeOff, mergeOn []string
	// lockPolicy begins each write transaction of the storage policy: hosts applying it at once
	// take turns (nil: the engine's write lock already serialises them).
	lockPolicy func(ctx context.Context, tx *sql.Tx) error
	// policyCache are run first and last in each write transaction of the storage policy (nil:
	// none): SQLite's default page cache while it runs, as its batches revisit scattered index
	// pages (with WriterCacheKiB, prune took a fifth more CPU).
	policyCache [2][]string
	// check verifies the database (Store.Check).
	check func(ctx context.Context, db *sql.DB) error
	// scanTx begins a read-only transaction on conn that sees one snapshot
	// of the whole database; restore undoes what it set on conn.
	scanTx func(ctx context.Context, conn *sql.Conn) (tx *sql.Tx, restore func(), err error)
	// captures lists an export's captures (query and args) in tx.
	captures func(ctx context.Context, tx *sql.Tx, query string, args []any) (*captureList, error)
	// searcher prepares the search of t (text as typed) for a plan's lookups.
	searcher func(ctx context.Context, db *sql.DB, s searchArgs) (searcher, error)
	// transient reports an error after which a retry succeeds at once.
	transient func(err error) bool
	// onVideo is the condition that entries e are of video x (an SQL expression); on PostgreSQL
	// it also names the page's videos, so that the GIN index finds them.
	onVideo func(x string) string
	// hitEntries joins to videos v their entries e (capture_id, rank), looked up video by video:
	// on PostgreSQL only v's positions in each page are read, not every array of the page.
	hitEntries string
	// deleteEntries deletes the entries of the captures {ids}; its rows affected are entries.
	deleteEntries string
	// entries are the statements that store p's entries (its capture found by entryArgs).
	entries func(p Snapshot) []stmt
	// savePage runs a page's statements in one transaction.
	savePage func(ctx context.Context, s *Store, stmts []stmt) error
}

// Engine is the engine s was opened on.
func (s *Store) Engine() Engine { return s.d.engine }

// Transient reports an error of a store read that nothing but timing
// caused, which a retry in a second answers (serve: 503 with Retry-After).
func Transient(err error) bool {
	return sqliteDialect.transient(err) || pgDialect.transient(err)
}
