package fetch_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
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
			c, err := quota.RedisClientFromURL(srv.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return quota.NewRedis(c)
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
	return f.runner.Run(context.Background(), "US")
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
