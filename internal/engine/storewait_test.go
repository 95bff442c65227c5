package engine

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestRunOnAStoreThatNeverAnswers: a PostgreSQL address that accepts connections and never
// answers ends `run` within store.OpenTimeout with exit 1, an error naming what it waited for,
// and each region's check-in of that exit code sent.
func TestRunOnAStoreThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go silent(ln)
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US", "GB")
	e.cfg.Database = "postgres://trendfetch@" + ln.Addr().String() + "/trendfetch"
	ends := monitorEnds(t, e)
	defer func(d time.Duration) { store.OpenTimeout = d }(store.OpenTimeout)
	store.OpenTimeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the test's own bound
	defer cancel()
	start := time.Now()
	err = e.Run(ctx, []string{"US", "GB"}, false)
	if took := time.Since(start); ctx.Err() != nil || took > 5*time.Second {
		t.Fatalf("run waited %s on a store that never answers, want about %s", took, store.OpenTimeout)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer from PostgreSQL within 1s") || exitcode.Of(ctx, err) != exitcode.Error {
		t.Errorf("err = %v, want exit 1 naming what it waited for", err)
	}
	if ends := ends(); len(ends) != 2 || !strings.HasPrefix(ends[0], "/us/1 ") || !strings.HasPrefix(ends[1], "/gb/1 ") || !strings.Contains(ends[0], "no answer from PostgreSQL") {
		t.Errorf("check-ins: %q, want each region's exit 1 naming the wait", ends)
	}
}

// monitorEnds points e's check-ins at a monitor and returns what it heard: each end's path and body.
func monitorEnds(t *testing.T, e *Engine) func() []string {
	var (
		mu   sync.Mutex
		ends []string
	)
	monitor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/start") {
			ends = append(ends, r.URL.Path+" "+string(body))
		}
	}))
	t.Cleanup(monitor.Close)
	e.cfg.Runs.CheckinURL = monitor.URL + "/" + checkin.RegionPlaceholder
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ends)
	}
}

// TestRunBlockedByALock: with the default bounds, a run whose statements wait for a lock another
// session holds on PostgreSQL (the runs table) ends within 30 s: exit 1, an error naming the
// wait, its check-in sent.
func TestRunBlockedByALock(t *testing.T) {
	url := pg.Database(t)
	e, _, logs := newTestEngine(t, store.PolicyKeep, "US")
	e.cfg.Database = url
	ends := monitorEnds(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test's own bound
	defer cancel()
	if err := e.Run(ctx, []string{"US"}, true); err != nil {
		t.Fatalf("first run: %v\n%s", err, logs)
	}
	lockRuns(ctx, t, url)
	start := time.Now()
	err := e.Run(ctx, []string{"US"}, true)
	if took := time.Since(start); took > 30*time.Second || exitcode.Of(ctx, err) != exitcode.Error || !strings.Contains(fmt.Sprint(err), "lock") {
		t.Fatalf("run after %s: %v (exit %d), want exit 1 within 30 s naming the lock\n%s", took, err, exitcode.Of(ctx, err), logs)
	}
	if ends := ends(); len(ends) != 2 || !strings.HasPrefix(ends[1], "/us/1 ") || !strings.Contains(ends[1], "lock") {
		t.Errorf("check-ins: %q, want the first run's, then exit 1 naming the lock", ends)
	}
}

// TestCopyIntoAStoreThatNeverAnswers: copy into a PostgreSQL address that accepts connections
// and never answers ends within store.OpenTimeout, naming the wait.
func TestCopyIntoAStoreThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go silent(ln)
	ctx := context.Background()
	e, _, logs := newTestEngine(t, store.PolicyKeep, "US")
	if err := openRunner(t, e).RunRegions(ctx, []string{"US"}); err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	src := e.cfg.Database
	e.cfg.Database = "postgres://trendfetch@" + ln.Addr().String() + "/trendfetch"
	defer func(d time.Duration) { store.OpenTimeout = d }(store.OpenTimeout)
	store.OpenTimeout = time.Second
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = e.CopyFrom(ctx, src)
	if took := time.Since(start); took > 5*time.Second || err == nil || !strings.Contains(err.Error(), "no answer from PostgreSQL within 1s") {
		t.Errorf("copy after %s: %v, want an error naming the wait within about 1s", took, err)
	}
}

// TestReadOnAStoreThatNeverAnswers: opening a store to read (`runs`, `search`, `serve`...) at an
// address that accepts connections and never answers ends within store.OpenTimeout naming the
// wait, or within the URL's own connect_timeout, which wins.
func TestReadOnAStoreThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go silent(ln)
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US")
	defer func(d time.Duration) { store.OpenTimeout = d }(store.OpenTimeout)
	store.OpenTimeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the test's own bound
	defer cancel()
	for _, c := range []struct {
		query string
		want  time.Duration
	}{{"", time.Second}, {"?connect_timeout=3", 3 * time.Second}} {
		e.cfg.Database = "postgres://trendfetch@" + ln.Addr().String() + "/trendfetch" + c.query
		start := time.Now()
		_, err := e.OpenStore(ctx, true)
		if took := time.Since(start); took < c.want-100*time.Millisecond || took > c.want+2*time.Second ||
			!strings.Contains(fmt.Sprint(err), "no answer from PostgreSQL within "+c.want.String()) {
			t.Errorf("open%s ended after %s: %v, want about %s naming the wait", c.query, took, err, c.want)
		}
	}
}

// TestServeOnAStoreThatNeverAnswers: while another session holds a lock on the runs table of
// serve's PostgreSQL, /v1/runs and /healthz answer 503 within serve.timeout.
func TestServeOnAStoreThatNeverAnswers(t *testing.T) {
	url := pg.Database(t)
	e, _, logs := newTestEngine(t, store.PolicyKeep, "US")
	e.cfg.Database, e.cfg.Serve.Timeout = url, config.Duration(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test's own bound
	defer cancel()
	if err := e.Run(ctx, []string{"US"}, true); err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.Serve(ctx, ln, "", nil) //nolint:errcheck
	base := "http://" + ln.Addr().String()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(base + "/healthz"); err == nil && res.Body.Close() == nil && res.StatusCode == http.StatusOK {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("serve not up: %v\n%s", err, logs)
		}
	}
	lockRuns(ctx, t, url)
	for _, path := range []string{"/v1/runs", "/healthz"} {
		start := time.Now()
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if took := time.Since(start); res.StatusCode != http.StatusServiceUnavailable || took > 3*time.Second {
			t.Errorf("%s: %d after %s, want 503 within serve.timeout (1s)", path, res.StatusCode, took)
		}
	}
}

// lockRuns holds an ACCESS EXCLUSIVE lock on the runs table of the PostgreSQL database at url,
// in a session of its own, until the test ends.
func lockRuns(ctx context.Context, t *testing.T, url string) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() }) //nolint:errcheck
	if _, err := tx.ExecContext(ctx, `LOCK TABLE runs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
}

// silent accepts connections on ln and never answers, until ln is closed.
func silent(ln net.Listener) {
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		held = append(held, c)
	}
}
