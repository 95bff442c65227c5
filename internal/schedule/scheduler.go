// Package schedule runs trendfetch's scheduler mode (robfig/cron/v3: one entry per region, a region
// never runs twice at once, a semaphore bounds how many run together, a graceful stop) and computes
// the schedules themselves (Every, Shift, ParseSpec) without starting it.
package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"
)

// DefaultGrace is Options.Grace's default.
const DefaultGrace = 30 * time.Second

// ErrGraceExpired is the cause of a job context cancelled when the grace
// period ended before the job.
var ErrGraceExpired = errors.New("scheduler stopping: grace period expired")

// Job is one cron entry: a region's run.
type Job struct {
	Name     string // the region code, unique
	Schedule cron.Schedule
	// Run does the work; ctx is cancelled only when a stop's grace period
	// expires (cause ErrGraceExpired).
	Run func(ctx context.Context) error
}

// Options configure a Scheduler. The zero value is usable.
type Options struct {
	// Concurrency is how many jobs may run at once (default 1); a tick
	// without a free slot waits, and the entry's ticks meanwhile are skipped.
	Concurrency int
	// Grace is how long running jobs may finish once a stop begins before
	// their contexts are cancelled (default DefaultGrace; < 0: none).
	Grace time.Duration
	Log   zerolog.Logger
	// Fatal, when set, reports whether a job's error stops the scheduler
	// (Run then returns it); other errors only end their job.
	Fatal func(error) bool
}

// Scheduler runs Jobs on their schedules: New, then Run (or Start and Stop).
type Scheduler struct {
	cron  *cron.Cron
	jobs  []Job
	opts  Options
	sem   chan struct{}
	fatal chan error

	stopOnce sync.Once
	stopping chan struct{} // closed when a stop begins: no new job starts

	jobCtx     context.Context
	cancelJobs context.CancelCauseFunc

	mu      sync.Mutex
	active  map[string]bool // entries with a tick waiting or running
	running []string        // entries holding a slot, in the order they took it
}

// New builds a Scheduler for jobs; it returns an error when a job lacks a
// name, a schedule or Run, or when two jobs share a name.
func New(jobs []Job, opts Options) (*Scheduler, error) {
	opts.Concurrency = max(opts.Concurrency, 1)
	opts.Grace = max(cmp.Or(opts.Grace, DefaultGrace), 0)
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Name == "" || j.Schedule == nil || j.Run == nil {
			return nil, fmt.Errorf("schedule: job %q needs a name, a schedule and a run function", j.Name)
		}
		if seen[j.Name] {
			return nil, fmt.Errorf("schedule: job %q defined twice", j.Name)
		}
		seen[j.Name] = true
	}
	l := cronLogger{opts.Log}
	s := &Scheduler{
		cron:     cron.New(cron.WithChain(cron.Recover(l)), cron.WithLogger(l)),
		active:   map[string]bool{},
		jobs:     jobs,
		opts:     opts,
		sem:      make(chan struct{}, opts.Concurrency),
		fatal:    make(chan error, 1),
		stopping: make(chan struct{}),
	}
	s.jobCtx, s.cancelJobs = context.WithCancelCause(context.Background())
	for _, j := range jobs {
		s.cron.Schedule(j.Schedule, cron.FuncJob(func() { s.tick(j) }))
	}
	return s, nil
}

// tick is one firing of j: skipped while j's previous tick waits or runs; else it waits for a
// run slot (or the stop), runs j and reports a fatal error. Skips and waits log the slots'
// holders (held_by).
func (s *Scheduler) tick(j Job) {
	busy := false
	held := s.locked(func() { busy, s.active[j.Name] = s.active[j.Name], true })
	if busy {
		s.opts.Log.Warn().Str("region", j.Name).Strs("held_by", held).Msg("tick skipped: the region's previous tick is still waiting or running")
		return
	}
	defer s.locked(func() { delete(s.active, j.Name) })
	if !s.takeSlot(j) {
		return
	}
	s.locked(func() { s.running = append(s.running, j.Name) })
	defer func() {
		s.locked(func() { s.running = slices.DeleteFunc(s.running, func(n string) bool { return n == j.Name }) })
		<-s.sem
	}()
	select {
	case <-s.stopping: // the stop began while this tick waited for a slot
		return
	default:
	}
	ctx, cancel := context.WithCancel(s.jobCtx)
	defer cancel()
	err := s.runJob(ctx, j)
	if err != nil && s.opts.Fatal != nil && s.opts.Fatal(err) {
		select {
		case s.fatal <- fmt.Errorf("job %s: %w", j.Name, err):
		default:
		}
	}
}

// takeSlot takes one of the run slots for j, logging when it must wait; false when the stop
// began first.
func (s *Scheduler) takeSlot(j Job) bool {
	select {
	case <-s.stopping:
		return false
	case s.sem <- struct{}{}:
		return true
	default:
	}
	s.opts.Log.Info().Str("region", j.Name).Strs("held_by", s.locked(func() {})).Msg("tick waits for a run slot")
	select {
	case <-s.stopping:
		return false
	case s.sem <- struct{}{}:
		return true
	}
}

// locked runs f holding s.mu and returns the entries holding a slot.
func (s *Scheduler) locked(f func()) (held []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	return slices.Clone(s.running)
}

// runJob runs j, turning a panic into a logged error so that tick's guards are always released.
func (s *Scheduler) runJob(ctx context.Context, j Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("job %s panicked: %v", j.Name, r)
			s.opts.Log.Error().Str("region", j.Name).Str("stack", string(debug.Stack())).Err(err).Msg("job panicked")
		}
	}()
	return j.Run(ctx)
}

// Start fires the entries in the background and logs their next runs.
func (s *Scheduler) Start() {
	s.cron.Start()
	for _, j := range s.jobs {
		s.opts.Log.Info().Str("region", j.Name).Time("next_run", j.Schedule.Next(time.Now()).UTC()).Msg("scheduled")
	}
}

// Stop stops the scheduler: no job starts from now on, running jobs may finish until ctx is done,
// then their contexts are cancelled and Stop waits for them. It returns nil when every job finished
// in time, else ErrGraceExpired.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopping) })
	done := s.cron.Stop().Done()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.opts.Log.Warn().Msg("grace period over: cancelling running jobs")
	s.cancelJobs(ErrGraceExpired)
	<-done
	return ErrGraceExpired
}

// Run starts the scheduler until ctx is done (then nil) or a job reports a
// fatal error (then that error), and stops with the grace period.
func (s *Scheduler) Run(ctx context.Context) error {
	s.Start()
	var err error
	select {
	case <-ctx.Done():
		s.opts.Log.Info().Int64("grace_ms", s.opts.Grace.Milliseconds()).Msg("stopping: no new runs; waiting for running ones")
	case err = <-s.fatal:
		s.opts.Log.Error().Err(err).Int64("grace_ms", s.opts.Grace.Milliseconds()).Msg("stopping on a fatal error")
	}
	gctx, cancel := context.WithTimeout(context.Background(), s.opts.Grace)
	defer cancel()
	s.Stop(gctx)
	s.cancelJobs(context.Canceled) // every job has returned; release the context
	s.opts.Log.Info().Msg("scheduler stopped")
	return err
}

// cronLogger adapts zerolog to cron.Logger (Info at debug level).
type cronLogger struct{ log zerolog.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Debug().Str("component", "cron").Fields(kv).Msg(msg)
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Str("component", "cron").Err(err).Fields(kv).Msg(msg)
}
