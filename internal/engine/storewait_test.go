package engine

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test's own bound
	defer cancel()
	e, url, logs := servedAfterARun(ctx, t)
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

// servedAfterARun returns an engine on a fresh PostgreSQL database (its URL) with serve.timeout 1s
// and one run of US stored, and its log.
func servedAfterARun(ctx context.Context, t *testing.T) (*Engine, string, *bytes.Buffer) {
	t.Helper()
	url := pg.Database(t)
	e, _, logs := newTestEngine(t, store.PolicyKeep, "US")
	e.cfg.Database, e.cfg.Serve.Timeout = url, config.Duration(time.Second)
	if err := e.Run(ctx, []string{"US"}, true); err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	return e, url, logs
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

// TestServeListensBeforeItsStoreOpens (issue 39 item 5): serve started while its PostgreSQL
// accepts connections and never answers listens at once: /healthz and the reads answer 503
// within serve.timeout (the reason only with the token), /metrics 200; once the database
// answers, serve opens it on its next attempt and reads answer 200.
func TestServeListensBeforeItsStoreOpens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test's own bound
	defer cancel()
	e, dbURL, logs := servedAfterARun(ctx, t)
	var forward atomic.Bool
	u, _ := url.Parse(dbURL)
	u.Host = answerLater(t, u.Host, &forward)
	e.cfg.Database, e.log = u.String(), zerolog.New(zerolog.SyncWriter(logs)) // serve logs from several goroutines
	defer func(d, r time.Duration) { store.OpenTimeout, StoreRetry = d, r }(store.OpenTimeout, StoreRetry)
	store.OpenTimeout, StoreRetry = 2*time.Second, 200*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const token = "0123456789abcdef0123"
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- e.Serve(sctx, ln, token, nil) }()
	base := "http://" + ln.Addr().String()
	for _, c := range []struct {
		path, token string
		status      int
		want        string
	}{
		{"/healthz", "", 503, `"the database cannot be read (details with the token`},
		{"/healthz", token, 503, "the database is not open yet"},
		{"/v1/runs", token, 503, `"code":"unavailable","message":"the database is not open yet`},
		{"/metrics", token, 200, "trendfetch_build_info"},
	} {
		if status, body, took := get(t, base+c.path, c.token); status != c.status || took > 2*time.Second || !strings.Contains(body, c.want) {
			t.Errorf("%s (token %t) before the database answers: %d after %s %.300s, want %d within serve.timeout naming %q", c.path, c.token != "", status, took, body, c.status, c.want)
		}
	}
	forward.Store(true)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if status, _, _ := get(t, base+"/v1/runs", token); status == 200 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("/v1/runs still %d 15s after the database answers", status)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// get GETs url with bearer token ("" = none) within 5s: status, body, how long it took.
func get(t *testing.T, url, token string) (int, string, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body), time.Since(start)
}

// answerLater listens on a free port and returns its address: each connection is held silent
// until forward is set, then connections are passed to upstream (host:port) while it stays set.
func answerLater(t *testing.T, upstream string, forward *atomic.Bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			if forward.Load() {
				if up, err := net.Dial("tcp", upstream); err == nil {
					held = append(held, up)
					go pipe(up, c, forward)
					go pipe(c, up, forward)
				}
			}
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

// pipe copies src to dst while forward is set; after, it reads and drops what src sends.
func pipe(dst, src net.Conn, forward *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if forward.Load() {
			dst.Write(buf[:n]) //nolint:errcheck
		}
	}
}

// TestRunOnAStoreThatStopsAnswering (issue 39 item 5): a PostgreSQL that stops answering once
// the run has started (a server stopped mid-run) ends the run within fetch.WriteTimeout of
// each write: exit 1, its check-in sent, instead of a run waiting forever.
func TestRunOnAStoreThatStopsAnswering(t *testing.T) {
	dbURL := pg.Database(t)
	e, _, logs := newTestEngine(t, store.PolicyKeep, "US")
	var forward atomic.Bool
	forward.Store(true)
	u, _ := url.Parse(dbURL)
	u.Host = answerLater(t, u.Host, &forward)
	e.cfg.Database, e.log = u.String(), zerolog.New(zerolog.SyncWriter(logs))
	api, _ := url.Parse(e.cfg.API.Endpoint)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forward.Store(false) // the database stops answering once the run calls the API
		httputil.NewSingleHostReverseProxy(api).ServeHTTP(w, r)
	}))
	defer front.Close()
	e.cfg.API.Endpoint = front.URL + "/"
	ends := monitorEnds(t, e)
	defer func(d time.Duration) { fetch.WriteTimeout = d }(fetch.WriteTimeout)
	fetch.WriteTimeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the test's own bound
	defer cancel()
	start := time.Now()
	err := e.Run(ctx, []string{"US"}, true)
	if took := time.Since(start); ctx.Err() != nil || exitcode.Of(ctx, err) != exitcode.Error {
		t.Fatalf("run after %s: %v (exit %d), want exit 1 within a few WriteTimeouts", took, err, exitcode.Of(ctx, err))
	}
	if ends := ends(); len(ends) != 1 || !strings.HasPrefix(ends[0], "/us/1 ") {
		t.Errorf("check-ins: %q, want exit 1", ends)
	}
	t.Logf("run: %v", err)
}
