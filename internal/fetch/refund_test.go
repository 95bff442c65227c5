package fetch_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

// closedPort returns an http:// endpoint on 127.0.0.1 where nothing
// listens: every connection is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/"
}

// hangUpAfterRequest returns an http:// endpoint whose server reads each
// request's head and closes the connection without answering: the request
// left the host (Google would have counted it).
func hangUpAfterRequest(t *testing.T) (endpoint string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					requests.Add(1)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/", requests
}

// refundBackends are the real quota backends the refund tests run against.
func refundBackends(t *testing.T) map[string]func(t *testing.T) quota.Backend {
	return map[string]func(t *testing.T) quota.Backend{
		"sqlite": sqliteBackend,
		"redis": func(t *testing.T) quota.Backend {
			srv := redistest.Start(t)
			c, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
			if err != nil {
				t.Fatal(err)
			}
			return quota.NewRedis(c, 0, 0)
		},
	}
}

// runAgainst points f's runner at endpoint, with 2 retries and no backoff
// to speak of, and runs US.
func runAgainst(t *testing.T, f *fixture, endpoint string, timeout time.Duration) (store.Run, error) {
	t.Helper()
	svc, err := fetch.NewService(context.Background(), testKey, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	f.runner.Service = svc
	f.runner.Settings.Retries = 2
	f.runner.Settings.RetryBackoff = time.Millisecond
	f.runner.Settings.Timeout = timeout
	return f.runner.Run(context.Background(), "US", fetch.Lease{})
}

// TestRefundWhenNeverLeftHost: a run against a closed port (connection
// refused: transient, three attempts) and one against a name that does not
// resolve (not retried) end with 0 units used in the quota backend and on
// the run record; units another process reserved meanwhile stay counted.
func TestRefundWhenNeverLeftHost(t *testing.T) {
	for name, newBackend := range refundBackends(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name, endpoint string
				timeout        time.Duration
				attempts       int
			}{
				{"connection refused", closedPort(t), 5 * time.Second, 3},
				// .invalid never resolves (RFC 6761); a resolver that times
				// out instead still fails with a *net.DNSError within 30 s.
				{"DNS failure", "http://trendfetch-refund-test.invalid/", 30 * time.Second, 1},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f := newFixture(t, newBackend(t), nil, nil)
					// Another process's call, admitted before the run: never refunded.
					if d, err := f.runner.Limiter.Reserve(context.Background(), "proj-a", "videos.list"); err != nil || !d.Allowed {
						t.Fatalf("reserve: %+v %v", d, err)
					}
					run, err := runAgainst(t, f, tc.endpoint, tc.timeout)
					if err == nil || run.Outcome != store.OutcomeFailed {
						t.Fatalf("run against %s: outcome %s, err %v; want failed", tc.endpoint, run.Outcome, err)
					}
					if run.Calls["videos.list"] != tc.attempts {
						t.Errorf("%d attempts, want %d", run.Calls["videos.list"], tc.attempts)
					}
					if run.Units["units"] != 0 {
						t.Errorf("run record counts %d units, want 0", run.Units["units"])
					}
					st := f.runner.Limiter.Status(context.Background(), "proj-a")
					if !st.Reachable || st.Buckets[0].Used != 1 || st.Buckets[0].Entries != 1 {
						t.Errorf("quota status: %+v, want 1 unit in 1 entry (the other process's call)", st.Buckets)
					}
					if n := strings.Count(f.logs.String(), "its units were refunded"); n != tc.attempts {
						t.Errorf("%d refunds logged, want %d; logs:\n%s", n, tc.attempts, f.logs)
					}
				})
			}
		})
	}
}

// TestNoRefundOnceSent: a server that reads each request and hangs up
// without answering gets three attempts; each left the host, so each stays
// counted.
func TestNoRefundOnceSent(t *testing.T) {
	for name, newBackend := range refundBackends(t) {
		t.Run(name, func(t *testing.T) {
			endpoint, requests := hangUpAfterRequest(t)
			f := newFixture(t, newBackend(t), nil, nil)
			run, err := runAgainst(t, f, endpoint, 5*time.Second)
			if err == nil || requests.Load() != 3 {
				t.Fatalf("run: err %v after %d requests; want a failure after 3", err, requests.Load())
			}
			st := f.runner.Limiter.Status(context.Background(), "proj-a")
			if st.Buckets[0].Used != 3 || run.Units["units"] != 3 {
				t.Errorf("quota used %d, run record %d units; want 3 and 3 (the requests were sent)", st.Buckets[0].Used, run.Units["units"])
			}
			if strings.Contains(f.logs.String(), "refunded") {
				t.Errorf("a sent request was refunded; logs:\n%s", f.logs)
			}
		})
	}
}

// TestNoRefundAfterTransportRetry: net/http itself sends a GET again on a
// new connection when a reused one was closed after the request was
// written; if that new dial is refused, the error is a dial error although
// the request left the host once. Page 2 is answered that way (the server
// reads it, stops listening and hangs up), so its first attempt stays
// counted; the two later attempts are refused before any connection and
// are refunded.
func TestNoRefundAfterTransportRetry(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	emuURL := emu.StartTest(t)
	var srv *httptest.Server
	var page2 atomic.Int64
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("pageToken") == "" {
			resp, err := http.Get(emuURL + r.URL.RequestURI())
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			io.Copy(w, resp.Body)
			return
		}
		page2.Add(1)
		srv.Listener.Close() // the transport's own retry will be refused
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	}))
	t.Cleanup(srv.Close)

	f := newFixture(t, sqliteBackend(t), nil, nil)
	run, err := runAgainst(t, f, srv.URL+"/", 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || page2.Load() != 1 {
		t.Fatalf("run: err %v, page 2 requested %d times; want connection refused after 1", err, page2.Load())
	}
	if run.Calls["videos.list"] != 4 {
		t.Errorf("%d videos.list attempts, want 4 (page 1, page 2 three times)", run.Calls["videos.list"])
	}
	st := f.runner.Limiter.Status(context.Background(), "proj-a")
	if st.Buckets[0].Used != 2 || run.Units["units"] != 2 {
		t.Errorf("quota used %d, run record %d units; want 2 and 2 (page 1 and page 2's first attempt were sent)", st.Buckets[0].Used, run.Units["units"])
	}
	if n := strings.Count(f.logs.String(), "its units were refunded"); n != 2 {
		t.Errorf("%d refunds logged, want 2; logs:\n%s", n, f.logs)
	}
}

// TestClockStepBackStopsRun: on the embedded backend, a local clock an hour
// behind the newest entry stops the run like a denial (exit 75 at the CLI)
// with a reason that says why and when admissions resume, and a warning in
// the log; no API call is sent. The newest entry is moved an hour ahead in
// quota.db, as a clock stepped back after it was written would leave it.
func TestClockStepBackStopsRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	b, err := quota.NewSQLite(path, false)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, b, nil, nil)
	if d, err := f.runner.Limiter.Reserve(context.Background(), "proj-a", "videos.list"); err != nil || !d.Allowed {
		t.Fatalf("reserve: %+v %v", d, err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var newestUS int64
	if err := db.QueryRow(`UPDATE quota_log SET ts_us = ts_us + ? RETURNING ts_us`, time.Hour.Microseconds()).Scan(&newestUS); err != nil {
		t.Fatal(err)
	}
	run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
	var stop *fetch.StopError
	if !errors.As(err, &stop) || run.Outcome != store.OutcomeDenied || f.emu.TotalCalls() != 0 {
		t.Fatalf("run with the clock an hour back: outcome %s, err %v, %d API calls; want denied, a StopError, 0 calls", run.Outcome, err, f.emu.TotalCalls())
	}
	if !strings.Contains(stop.Reason, "the local clock went back by 1h0m0s") || !strings.Contains(stop.Reason, `bucket "units"`) {
		t.Errorf("reason %q does not say the clock went back by 1h0m0s in bucket units", stop.Reason)
	}
	if want := time.UnixMicro(newestUS).Add(-quota.ClockStepTolerance); !stop.RetryAt.Equal(want) {
		t.Errorf("RetryAt %s, want %s (the newest entry minus the tolerance)", stop.RetryAt, want)
	}
	if !strings.Contains(f.logs.String(), `"clock_behind"`) {
		t.Errorf("no clock warning logged:\n%s", f.logs)
	}
}
