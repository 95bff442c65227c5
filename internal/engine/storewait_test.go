package engine

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestRunOnAStoreThatNeverAnswers: a PostgreSQL address that accepts connections and never
// answers ends `run` within storeOpenTimeout with exit 1, an error naming what it waited for,
// and each region's check-in of that exit code sent.
func TestRunOnAStoreThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go silent(ln)
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
	defer monitor.Close()
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US", "GB")
	e.cfg.Database = "postgres://trendfetch@" + ln.Addr().String() + "/trendfetch"
	e.cfg.Runs.CheckinURL = monitor.URL + "/" + checkin.RegionPlaceholder
	defer func(d time.Duration) { storeOpenTimeout = d }(storeOpenTimeout)
	storeOpenTimeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the test's own bound
	defer cancel()
	start := time.Now()
	err = e.Run(ctx, []string{"US", "GB"}, false)
	if took := time.Since(start); ctx.Err() != nil || took > 5*time.Second {
		t.Fatalf("run waited %s on a store that never answers, want about %s", took, storeOpenTimeout)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer from PostgreSQL within 1s") || exitcode.Of(ctx, err) != exitcode.Error {
		t.Errorf("err = %v, want exit 1 naming what it waited for", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 2 || !strings.HasPrefix(ends[0], "/us/1 ") || !strings.HasPrefix(ends[1], "/gb/1 ") || !strings.Contains(ends[0], "no answer from PostgreSQL") {
		t.Errorf("check-ins: %q, want each region's exit 1 naming the wait", ends)
	}
}

// TestCopyIntoAStoreThatNeverAnswers: copy into a PostgreSQL address that accepts connections
// and never answers ends within storeOpenTimeout, naming the wait.
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
	defer func(d time.Duration) { storeOpenTimeout = d }(storeOpenTimeout)
	storeOpenTimeout = time.Second
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = e.CopyFrom(ctx, src)
	if took := time.Since(start); took > 5*time.Second || err == nil || !strings.Contains(err.Error(), "no answer from PostgreSQL within 1s") {
		t.Errorf("copy after %s: %v, want an error naming the wait within about 1s", took, err)
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
