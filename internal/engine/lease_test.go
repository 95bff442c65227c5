package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestSecondRunOfARegionIsRefused: while one runner's run holds its region's lease, a second
// runner of the same credential (another process, same quota database) gets a
// *quota.LeaseHeldError, records nothing and checks in exit 3; once the first run ends, the
// region runs again.
func TestSecondRunOfARegionIsRefused(t *testing.T) {
	ctx := context.Background()
	e, emu, logs := newTestEngine(t, store.PolicyKeep, "US")
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
	e.cfg.Runs.CheckinURL = monitor.URL + "/" + checkin.RegionPlaceholder
	first, second := openRunner(t, e), openRunner(t, e)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	emu.SetHook(func(http.ResponseWriter, *http.Request) bool {
		once.Do(func() { close(started); <-release })
		return false
	})
	done := make(chan error)
	go func() {
		_, err := first.RunOne(ctx, "US")
		done <- err
	}()
	<-started
	run, err := second.RunOne(ctx, "US")
	var held *quota.LeaseHeldError
	if !errors.As(err, &held) || exitcode.Of(ctx, err) != exitcode.Running || run.ID != 0 {
		t.Errorf("second run: run %d, err %v; want *quota.LeaseHeldError (exit 3), nothing recorded", run.ID, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first run: %v\n%s", err, logs)
	}
	if runs, _ := first.store.RunsPage(ctx, store.RunsQuery{}); len(runs) != 1 {
		t.Errorf("%d runs recorded, want 1 (the refused run records nothing)", len(runs))
	}
	mu.Lock()
	if len(ends) != 2 || !strings.HasPrefix(ends[0], "/us/3 ") || !strings.HasPrefix(ends[1], "/us/0 ") {
		t.Errorf("check-ins: %q, want US's exit 3 (refused), then 0", ends)
	}
	mu.Unlock()
	if _, err := second.RunOne(ctx, "US"); err != nil {
		t.Errorf("after the first run released the lease: %v", err)
	}
}

// openRunner opens a runner of e, closed when t ends.
func openRunner(t *testing.T, e *Engine) *Runner {
	t.Helper()
	r, err := e.OpenRunner(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
