package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/pgtest"
)

// pgURL returns the URL of a fresh database on the package's server.
func pgURL(t *testing.T) string {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Start() })
	return pgtest.Require(t, pg.srv, pg.err).Database(t)
}

// TestPostgresMigrateOnce: hosts that open a new database at once migrate
// it once (the advisory lock): every open succeeds and each migration has
// one schema_migrations row.
func TestPostgresMigrateOnce(t *testing.T) {
	url := pgURL(t)
	ctx := context.Background()
	const hosts = 8
	var wg sync.WaitGroup
	stores := make([]*Store, hosts)
	errs := make([]error, hosts)
	for i := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(ctx, url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("host %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var rows, want int
	if err := stores[0].db.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &want); err != nil {
		t.Fatal(err)
	}
	if have, w, err := stores[0].SchemaVersion(ctx); err != nil || have != w || rows != w || want != w {
		t.Errorf("%d migration rows, version %d/%d, %v", rows, have, w, err)
	}
}

// TestPostgresOneVersionPerChange: two hosts storing the same video's
// changed text at the same moment (two connections, each its own Store)
// make one new version, and a retried page adds no entry.
func TestPostgresOneVersionPerChange(t *testing.T) {
	url := pgURL(t)
	ctx := context.Background()
	a, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	vs := testVideos("r", 50)
	if err := a.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, a, "US"), Region: "US", FirstRank: 1, Videos: vs, At: at}); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		for i := range vs {
			vs[i].Title = fmt.Sprintf("changed %d %d", round, i)
		}
		runA, runB := startRun(t, a, "US"), startRun(t, b, "GB")
		at = at.Add(time.Hour)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, x := range []struct {
			s   *Store
			run int64
			reg string
		}{{a, runA, "US"}, {b, runB, "GB"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = x.s.SaveSnapshot(ctx, Snapshot{RunID: x.run, Region: x.reg, FirstRank: 1, Videos: vs, At: at})
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		// A retried page (same run, region and ranks) finds its capture.
		if err := a.SaveSnapshot(ctx, Snapshot{RunID: runA, Region: "US", FirstRank: 1, Videos: vs, At: at}); err == nil {
			t.Errorf("round %d: a page stored twice was accepted", round)
		}
	}
	var versions, maxVersion, captures, entries int
	if err := a.db.QueryRow(`SELECT (SELECT count(*) FROM video_texts), (SELECT max(text_version) FROM videos),
       (SELECT count(*) FROM captures), (SELECT count(*) FROM entries)`).Scan(&versions, &maxVersion, &captures, &entries); err != nil {
		t.Fatal(err)
	}
	if versions != 5*50 || maxVersion != 5 || captures != 11 || entries != 11*50 {
		t.Errorf("%d old versions, newest %d, %d captures, %d entries; want 250, 5, 11, 550", versions, maxVersion, captures, entries)
	}
}

// TestPostgresReadOnly: serve's read-only open refuses a database without
// the schema, reads a migrated one, and fails every write.
func TestPostgresReadOnly(t *testing.T) {
	url := pgURL(t)
	ctx := context.Background()
	if _, err := OpenReadOnly(ctx, url); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only open of an empty database: %v, want fs.ErrNotExist", err)
	}
	w, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	startRun(t, w, "US")
	r, err := OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if runs, err := r.RunsPage(ctx, RunsQuery{}); err != nil || len(runs) != 1 {
		t.Errorf("read-only RunsPage: %v %v", runs, err)
	}
	if _, err := r.StartRun(ctx, Run{Region: "GB"}); err == nil {
		t.Error("a read-only store started a run")
	}
}
