package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// shared is the package's server (none under -short).
var shared Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// TestShared: the tests of a package share one server, started once.
func TestShared(t *testing.T) {
	if a, b := shared.Server(t), shared.Server(t); a != b || a == nil {
		t.Errorf("two calls of Shared.Server: %p and %p, want one server", a, b)
	}
}

// TestDatabase: each test gets an empty database of its own on a server
// running as an unprivileged user, with pg_trgm available (the store's
// search of scripts without spaces needs it).
func TestDatabase(t *testing.T) {
	s := shared.Server(t)
	a, b := s.Database(t), s.Database(t)
	if a == b {
		t.Fatalf("two tests share database %s", a)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_trgm"); err != nil {
		t.Fatalf("pg_trgm: %v (Debian: postgresql-contrib)", err)
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 130000 {
		t.Fatalf("server_version_num %d, want PostgreSQL 13 or later", version)
	}
	var sim float64
	if err := conn.QueryRow(ctx, "SELECT similarity('trending', 'trend')").Scan(&sim); err != nil || sim <= 0 {
		t.Fatalf("similarity = %v, %v", sim, err)
	}
	// The locale classifies every script's letters: pg_trgm indexes CJK
	// text (under the C locale it has no trigram, and a CJK search reads
	// every row).
	var trigrams int
	if err := conn.QueryRow(ctx, "SELECT cardinality(show_trgm('東京ラーメン'))").Scan(&trigrams); err != nil || trigrams == 0 {
		t.Fatalf("show_trgm('東京ラーメン') has %d trigrams (%v): the cluster's locale is not UTF-8", trigrams, err)
	}
}

// TestPsql: Psql answers a query through Debian's psql, and a failing
// statement is an error carrying psql's message.
func TestPsql(t *testing.T) {
	s := shared.Server(t)
	url := s.Database(t)
	if out, err := s.Psql(url, "-tAc", "SELECT 6 * 7"); err != nil || out != "42\n" {
		t.Errorf("Psql SELECT 6 * 7 = %q, %v", out, err)
	}
	if _, err := s.Psql(url, "-c", "SELECT nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Psql of a bad statement: %v", err)
	}
}

// TestDurable: a Durable server commits as a deployment does (fsync,
// synchronous_commit and full_page_writes on); the tests' server does not.
func TestDurable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server process")
	}
	fast := shared.Server(t)
	durable, err := StartWith(Options{Durable: true})
	durable = Require(t, durable, err)
	defer durable.Stop()
	const show = "SELECT current_setting('fsync') || current_setting('synchronous_commit') || current_setting('full_page_writes')"
	for _, c := range []struct {
		s    *Server
		want string
	}{{fast, "offoffoff"}, {durable, "ononon"}} {
		if out, err := c.s.Psql(c.s.URL("postgres"), "-tAc", show); err != nil || out != c.want+"\n" {
			t.Errorf("fsync, synchronous_commit, full_page_writes = %q, %v; want %s", out, err, c.want)
		}
	}
}
