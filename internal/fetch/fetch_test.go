package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

const testKey = "AIzaTEST-secret-key-0123456789"

type fixture struct {
	emu    *youtubetest.Server
	store  *store.Store
	runner *fetch.Runner
	logs   *strings.Builder
}

// newFixture wires a Runner (see newPipeline) to the emulator serving the
// 60-video sample as US, with the given limiter backend, buckets (default
// units: 100 per hour) and policy, logging to fixture.logs.
func newFixture(t *testing.T, backend quota.Backend, buckets []quota.Bucket, policy func(string) callsite.Policy) *fixture {
	t.Helper()
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	r := newPipeline(t, emu)
	if buckets == nil {
		buckets = []quota.Bucket{{Name: "units", Limit: 100, Window: time.Hour}}
	}
	lim, err := quota.New(backend, buckets, quota.Costs{callsite.VideosList: {{Bucket: "units", Units: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	r.Limiter = lim
	r.Credential = "proj-a"
	if policy != nil {
		r.Policy = policy
	}
	logs := &strings.Builder{}
	r.Log = zerolog.New(logs)
	return &fixture{emu: emu, store: r.Store.(*store.Store), logs: logs, runner: r}
}

func sqliteBackend(t *testing.T) quota.Backend {
	t.Helper()
	b, err := quota.NewSQLite(filepath.Join(t.TempDir(), "quota.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRunStoresSampleChart(t *testing.T) {
	f := newFixture(t, sqliteBackend(t), nil, nil)
	run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Pages != 2 || run.Videos != youtubetest.SampleSize || run.Units["units"] != 2 || run.Outcome != store.OutcomeSuccess {
		t.Errorf("run = %+v", run)
	}
	chart, err := f.store.Chart(context.Background(), run.ID, "US")
	if err != nil {
		t.Fatal(err)
	}
	want := youtubetest.Sample()
	if len(chart) != len(want) || chart[0].VideoID != want[0].Id || chart[59].VideoID != want[59].Id {
		t.Errorf("chart = %d entries, first %v", len(chart), chart[0])
	}
	if got := f.emu.Units(testKey); got != 2 {
		t.Errorf("emulator units = %d, want 2", got)
	}
}

func TestUpstreamErrors(t *testing.T) {
	t.Run("videoChartNotFound", func(t *testing.T) {
		f := newFixture(t, sqliteBackend(t), nil, nil)
		run, err := f.runner.Run(context.Background(), "ZW", fetch.Lease{})
		if err == nil || !strings.Contains(err.Error(), "region ZW has no mostPopular chart") {
			t.Fatalf("err = %v", err)
		}
		if run.Outcome != store.OutcomeFailed || f.emu.Calls("videos.list") != 1 {
			t.Errorf("outcome %s after %d calls; want failed after 1 (no retry)", run.Outcome, f.emu.Calls("videos.list"))
		}
	})
	t.Run("keyInvalid names the credential, never the key", func(t *testing.T) {
		f := newFixture(t, sqliteBackend(t), nil, nil)
		f.emu.SetKeys("another-key")
		run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
		var ce *fetch.CredentialError
		if !errors.As(err, &ce) || ce.Credential != "proj-a" {
			t.Fatalf("err = %v, want *CredentialError for proj-a", err)
		}
		if strings.Contains(err.Error(), testKey) || strings.Contains(run.Reason, testKey) || strings.Contains(f.logs.String(), testKey) {
			t.Error("the API key leaked into an error, the run record or the logs")
		}
	})
	t.Run("quotaExceeded marks the credential exhausted", func(t *testing.T) {
		backend := sqliteBackend(t)
		f := newFixture(t, backend, nil, nil)
		f.emu.SetDailyLimit(1)
		run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
		var stop *fetch.StopError
		if !errors.As(err, &stop) || !strings.Contains(stop.Reason, "quotaExceeded") {
			t.Fatalf("err = %v, want a StopError for quotaExceeded", err)
		}
		if run.Outcome != store.OutcomeDenied || run.Pages != 1 {
			t.Errorf("run = %+v, want denied after 1 stored page", run)
		}
		next := quota.NextPacificMidnight(time.Now())
		if d := stop.RetryAt.Sub(next); d < -time.Second || d > time.Second {
			t.Errorf("RetryAt = %s, want the next Pacific midnight %s", stop.RetryAt, next)
		}
		d, err := f.runner.Limiter.Reserve(context.Background(), "proj-a", callsite.VideosList)
		if err != nil || d.Allowed || !d.Exhausted {
			t.Errorf("after quotaExceeded: decision %+v, %v; want denied as exhausted", d, err)
		}
	})
	t.Run("transport error is redacted", func(t *testing.T) {
		f := newFixture(t, sqliteBackend(t), nil, nil)
		f.emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return false
			}
			c.Close()
			return true
		})
		run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
		if err == nil {
			t.Fatal("want an error when the connection is reset")
		}
		for _, s := range []string{err.Error(), run.Reason, f.logs.String()} {
			if strings.Contains(s, testKey) {
				t.Fatalf("API key leaked: %s", s)
			}
		}
	})
}

// TestPoliciesWhenRedisDies kills a real redis-server after the run's lease was taken and checks
// that a fail-open call site sends its calls unmetered and counts them (no unit stays on the
// record), and that a fail-closed one stops the run like a denial.
func TestPoliciesWhenRedisDies(t *testing.T) {
	for _, tc := range []struct {
		policy callsite.Policy
	}{{callsite.FailOpen}, {callsite.FailClosed}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			srv := redistest.Start(t)
			client, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
			if err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, quota.NewRedis(client, 0, 0), nil, func(string) callsite.Policy { return tc.policy })
			srv.Kill()
			start := time.Now()
			run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
			elapsed := time.Since(start)
			switch tc.policy {
			case callsite.FailOpen:
				if err != nil || run.Unmetered != 2 || run.Videos != youtubetest.SampleSize || run.Units["units"] != 0 {
					t.Errorf("fail-open: err %v, run %+v; want success with 2 unmetered calls", err, run)
				}
				if strings.Count(f.logs.String(), `"message":"quota backend unavailable;`) != 1 {
					t.Errorf("want exactly one backend-failure warning, logs:\n%s", f.logs)
				}
			case callsite.FailClosed:
				var stop *fetch.StopError
				if !errors.As(err, &stop) || !strings.Contains(stop.Reason, "limiter unavailable") {
					t.Fatalf("fail-closed: err = %v, want StopError limiter unavailable", err)
				}
				if run.Outcome != store.OutcomeDenied || f.emu.TotalCalls() != 0 {
					t.Errorf("fail-closed: outcome %s, %d API calls; want denied, 0 calls", run.Outcome, f.emu.TotalCalls())
				}
			}
			if elapsed > 3*time.Second {
				t.Errorf("run took %s with Redis down; the backend must not be waited on per call", elapsed)
			}
		})
	}
}

// TestUnresponsiveBackendIsWaitedOnOnce: a quota backend that accepts
// connections and never answers costs a run one wait (its lease
// acquisition), not one more per call site: the run makes exactly as many
// connection attempts as a lone lease acquisition does.
func TestUnresponsiveBackendIsWaitedOnOnce(t *testing.T) {
	url, accepted := silentRedis(t)
	newBackend := func() quota.Backend {
		c, err := redisconn.New(url, nil, redisconn.Sentinel{})
		if err != nil {
			t.Fatal(err)
		}
		return quota.NewRedis(c, 0, 0)
	}

	lone, err := quota.New(newBackend(), []quota.Bucket{{Name: "units", Limit: 100, Window: time.Hour}}, quota.Costs{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lone.AcquireLease(context.Background(), "proj-a", "US", time.Minute, "probe"); !errors.Is(err, quota.ErrUnavailable) {
		t.Fatalf("AcquireLease on a silent backend: %v, want ErrUnavailable", err)
	}
	lone.Close()
	perWait := accepted.Swap(0)
	if perWait == 0 {
		t.Fatal("the lease acquisition made no connection attempt")
	}

	f := newFixture(t, newBackend(), nil, func(string) callsite.Policy { return callsite.FailOpen })
	run, err := f.runner.Run(context.Background(), "US", fetch.Lease{})
	if err != nil || run.Unmetered != 2 || run.Videos != youtubetest.SampleSize {
		t.Fatalf("fail-open run: err %v, run %+v; want success with 2 unmetered calls", err, run)
	}
	if got := accepted.Load(); got != perWait {
		t.Errorf("the run made %d connection attempts to the silent backend, a lone lease acquisition %d: want the same (one wait per run)", got, perWait)
	}
	if n := strings.Count(f.logs.String(), `"message":"quota backend unavailable;`); n != 1 {
		t.Errorf("%d backend-failure warnings, want 1; logs:\n%s", n, f.logs)
	}
}

func TestCancelledRunIsRecordedInterrupted(t *testing.T) {
	f := newFixture(t, sqliteBackend(t), nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	f.emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("pageToken") != "" {
			cancel() // a signal arrives while page 2 is in flight
			<-r.Context().Done()
			return true
		}
		return false
	})
	run, err := f.runner.Run(ctx, "US", fetch.Lease{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	runs, err := f.store.Runs(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Outcome != store.OutcomeInterrupted || runs[0].Pages != run.Pages || run.Pages < 1 {
		t.Errorf("recorded %+v, want interrupted with the stored pages counted", runs[0])
	}
	n, _ := f.store.CountVideos(context.Background())
	if n != int64(run.Videos) || n%50 != 0 && n != youtubetest.SampleSize {
		t.Errorf("%d videos stored for %d counted: pages must be stored whole", n, run.Videos)
	}
}
