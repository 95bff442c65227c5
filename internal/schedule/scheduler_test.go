package schedule

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// soon fires every d after the time asked about: cron re-arms it after each
// run, so a job is offered a tick every d.
type soon time.Duration

func (d soon) Next(t time.Time) time.Time { return t.Add(time.Duration(d)) }

// syncBuffer is a bytes.Buffer safe for the scheduler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor waits until cond holds; it fails the test after a minute (a
// bound against hanging, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestNoOverlapAndConcurrencyLimit(t *testing.T) {
	for _, limit := range []int{1, 2} {
		var (
			mu        sync.Mutex
			active    int
			maxActive int
			perJob    = map[string]int{}
			runs      = map[string]int{}
		)
		job := func(name string) Job {
			return Job{Name: name, Schedule: soon(time.Millisecond), Run: func(ctx context.Context) error {
				mu.Lock()
				active++
				perJob[name]++
				if perJob[name] > 1 {
					t.Errorf("%s runs twice at once", name)
				}
				maxActive = max(maxActive, active)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // hold the slot across several ticks
				mu.Lock()
				active--
				perJob[name]--
				runs[name]++
				mu.Unlock()
				return nil
			}}
		}
		s, err := New([]Job{job("US"), job("GB"), job("JP")}, Options{Concurrency: limit, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		waitFor(t, "three runs of every job", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return runs["US"] >= 3 && runs["GB"] >= 3 && runs["JP"] >= 3
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		mu.Lock()
		if maxActive > limit {
			t.Errorf("concurrency %d: %d jobs ran at once", limit, maxActive)
		}
		if active != 0 {
			t.Errorf("%d jobs still running after Run returned", active)
		}
		mu.Unlock()
	}
}

func TestStopGivesGraceThenCancels(t *testing.T) {
	started := make(chan struct{})
	var (
		cause   atomic.Value
		release = make(chan struct{})
		starts  atomic.Int32
	)
	slow := Job{Name: "US", Schedule: soon(time.Millisecond), Run: func(ctx context.Context) error {
		if starts.Add(1) == 1 {
			close(started)
		}
		select {
		case <-ctx.Done():
			cause.Store(context.Cause(ctx))
			return ctx.Err()
		case <-release:
			return nil
		}
	}}
	// 1. The job ends within the grace period: not cancelled.
	s, err := New([]Job{slow}, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	// Stop waits for the running job; let it finish by itself. A Stop that
	// returned at once would be seen here well within the wait.
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a job was running and the grace period was open", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Errorf("Stop after the job finished within grace: %v", err)
	}
	if c := cause.Load(); c != nil {
		t.Errorf("job cancelled (%v) although it finished within grace", c)
	}
	n := starts.Load()
	if n != 1 {
		t.Errorf("%d starts, want 1 (SkipIfStillRunning)", n)
	}

	// 2. The grace period ends first: the job's context is cancelled with
	// ErrGraceExpired, Stop waits for it and reports it.
	started = make(chan struct{})
	release = make(chan struct{})
	starts.Store(0)
	s, err = New([]Job{slow}, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	<-started
	grace, cancel := context.WithCancel(context.Background())
	cancel() // the grace period is already over
	if err := s.Stop(grace); !errors.Is(err, ErrGraceExpired) {
		t.Errorf("Stop = %v, want ErrGraceExpired", err)
	}
	if c, _ := cause.Load().(error); !errors.Is(c, ErrGraceExpired) {
		t.Errorf("job context cause %v, want ErrGraceExpired", c)
	}
	// No job starts after Stop.
	after := starts.Load()
	time.Sleep(20 * time.Millisecond)
	if starts.Load() != after {
		t.Error("a job started after Stop")
	}
}

func TestTicksWaitingForASlotGiveUpOnStop(t *testing.T) {
	var ran atomic.Int32
	job := Job{Name: "GB", Schedule: soon(time.Hour), Run: func(context.Context) error {
		ran.Add(1)
		return nil
	}}
	s, err := New([]Job{job}, Options{Concurrency: 1, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	tick := func() { s.tick(job) }

	// 1. A tick waiting for the only slot gives up as soon as a stop begins,
	// while the slot is still held (it must not wait for the slot first).
	s.sem <- struct{}{} // another job holds the slot
	gaveUp := make(chan struct{})
	go func() { tick(); close(gaveUp) }()
	select {
	case <-gaveUp:
		t.Fatal("the tick returned while waiting for a slot, before any stop")
	case <-time.After(20 * time.Millisecond):
	}
	s.stopOnce.Do(func() { close(s.stopping) })
	select {
	case <-gaveUp:
	case <-time.After(5 * time.Second):
		t.Fatal("a tick waiting for a slot did not give up when the stop began")
	}
	<-s.sem

	// 2. A tick that finds a free slot and a stop already begun at the same
	// moment must not start its job: select picks a ready case at random,
	// so without the check after taking the slot about half of these ticks
	// would run.
	for range 200 {
		tick()
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d jobs ran, want 0: a tick must not start after Stop", n)
	}
}

func TestPanicIsRecoveredAndFatalErrorStops(t *testing.T) {
	var buf syncBuffer
	log := zerolog.New(&buf)
	var calls atomic.Int32
	errKey := errors.New("key rejected")
	j := Job{Name: "US", Schedule: soon(time.Millisecond), Run: func(ctx context.Context) error {
		switch calls.Add(1) {
		case 1:
			panic("boom")
		case 2:
			return errors.New("ordinary failure")
		default:
			return errKey
		}
	}}
	s, err := New([]Job{j}, Options{Log: log, Fatal: func(err error) bool { return errors.Is(err, errKey) }})
	if err != nil {
		t.Fatal(err)
	}
	// A bound against hanging: a panic that disabled the entry would leave
	// Run waiting forever.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = s.Run(ctx)
	if !errors.Is(err, errKey) {
		t.Fatalf("Run = %v, want the fatal error (a panic must not disable the entry)", err)
	}
	if n := calls.Load(); n < 3 {
		t.Errorf("%d calls: the panic or the ordinary failure stopped the scheduler", n)
	}
	out := buf.String()
	if !strings.Contains(out, `"level":"error"`) || !strings.Contains(out, "boom") {
		t.Errorf("recovered panic not logged at error level:\n%s", out)
	}
	if !strings.Contains(out, `"next_run"`) {
		t.Errorf("next run time not logged on start:\n%s", out)
	}
}

func TestNewRejectsBadJobs(t *testing.T) {
	ok := Job{Name: "US", Schedule: soon(time.Hour), Run: func(context.Context) error { return nil }}
	for name, jobs := range map[string][]Job{
		"no name":     {{Schedule: ok.Schedule, Run: ok.Run}},
		"no schedule": {{Name: "US", Run: ok.Run}},
		"no run":      {{Name: "US", Schedule: ok.Schedule}},
		"duplicate":   {ok, ok},
	} {
		if _, err := New(jobs, Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s, err := New([]Job{ok}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if e := s.Entries(now); len(e) != 1 || e[0].Name != "US" || !e[0].Next.Equal(now.Add(time.Hour)) {
		t.Errorf("Entries = %+v", e)
	}
}

// Entry is a job's next run.
type Entry struct {
	Name string
	Next time.Time
}

// Entries returns each job's next run after now, in job order.
func (s *Scheduler) Entries(now time.Time) []Entry {
	out := make([]Entry, len(s.jobs))
	for i, j := range s.jobs {
		out[i] = Entry{Name: j.Name, Next: j.Schedule.Next(now)}
	}
	return out
}
