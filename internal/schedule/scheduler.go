package schedule

import (
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

// DefaultGrace is how long running jobs may finish after Stop begins when
// Options.Grace is 0.
const DefaultGrace = 30 * time.Second

// ErrGraceExpired is the cancellation cause of a job context cancelled
// because the grace period ended before the job did.
var ErrGraceExpired = errors.New("scheduler stopping: grace period expired")

// Job is one cron entry: a region's run.
type Job struct {
	// Name identifies the entry in logs (the region code); unique.
	Name string
	// Schedule gives the entry's ticks.
	Schedule cron.Schedule
	// Run does the work. ctx is the job's own context, cancelled only when
	// the grace period of a stop expires (cause ErrGraceExpired); it is not
	// the context passed to Scheduler.Run.
	Run func(ctx context.Context) error
}

// Options configure a Scheduler. The zero value is usable.
type Options struct {
	// Concurrency is how many jobs may run at once across entries (default
	// 1). A tick that finds no free slot waits for one (logged with the
	// regions holding the slots); meanwhile further ticks of that entry are
	// skipped, each logged at warn level with the same.
	Concurrency int
	// Grace is how long running jobs may finish once a stop begins before
	// their contexts are cancelled (default DefaultGrace; < 0 means none).
	Grace time.Duration
	// Log receives the scheduler's lines; recovered panics at error level.
	Log zerolog.Logger
	// Fatal, when set, reports whether a job's error must stop the whole
	// scheduler (e.g. a rejected API key): Run then stops gracefully and
	// returns that error. Other errors only end their job.
	Fatal func(error) bool
}

// Entry is a job's next run, as computed from its schedule.
type Entry struct {
	// Name is the job's name.
	Name string
	// Next is the first tick after the time asked about.
	Next time.Time
}

// Scheduler runs Jobs on their schedules with robfig/cron/v3. Build it with
// New, then call Run (or Start and Stop).
type Scheduler struct {
	cron  *cron.Cron
	jobs  []Job
	opts  Options
	sem   chan struct{}
	log   zerolog.Logger
	fatal chan error

	stopOnce sync.Once
	stopping chan struct{} // closed when a stop begins: no new job starts

	jobCtx     context.Context
	cancelJobs context.CancelCauseFunc

	mu sync.Mutex
	// active holds the entries with a tick in progress (waiting or running);
	// running those holding a concurrency slot, in the order they took it.
	active  map[string]bool
	running []string
}

// New builds a Scheduler for jobs. Each job is wrapped, outermost first, in
// cron.Recover, a guard that skips (and logs) a tick while the entry's
// previous one is still waiting or running, and a panic guard of its own
// (see runJob). It returns an error when a job has no
// name, no schedule or no Run function, or when two jobs share a name.
func New(jobs []Job, opts Options) (*Scheduler, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Grace < 0 {
		opts.Grace = 0
	}
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
		log:      opts.Log,
		fatal:    make(chan error, 1),
		stopping: make(chan struct{}),
	}
	s.jobCtx, s.cancelJobs = context.WithCancelCause(context.Background())
	for _, j := range jobs {
		s.cron.Schedule(j.Schedule, s.wrap(j))
	}
	return s, nil
}

// Entries returns each job's next run after now, in job order. It needs no
// running scheduler.
func (s *Scheduler) Entries(now time.Time) []Entry {
	out := make([]Entry, len(s.jobs))
	for i, j := range s.jobs {
		out[i] = Entry{Name: j.Name, Next: j.Schedule.Next(now)}
	}
	return out
}

// wrap turns j into the cron job: skip the tick when the entry's previous
// tick is still in progress, wait for a concurrency slot (giving up when a
// stop begins), run with the job context, report fatal errors. Skipped and
// waiting ticks are logged with the regions holding the slots (held_by).
func (s *Scheduler) wrap(j Job) cron.Job {
	return cron.FuncJob(func() {
		s.mu.Lock()
		if s.active[j.Name] {
			held := append([]string(nil), s.running...)
			s.mu.Unlock()
			s.log.Warn().Str("region", j.Name).Strs("held_by", held).Msg("tick skipped: the region's previous tick is still waiting or running")
			return
		}
		s.active[j.Name] = true
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.active, j.Name)
			s.mu.Unlock()
		}()
		select {
		case <-s.stopping:
			return
		case s.sem <- struct{}{}:
		default:
			s.mu.Lock()
			held := append([]string(nil), s.running...)
			s.mu.Unlock()
			s.log.Info().Str("region", j.Name).Strs("held_by", held).Msg("tick waits for a run slot")
			select {
			case <-s.stopping:
				return
			case s.sem <- struct{}{}:
			}
		}
		s.mu.Lock()
		s.running = append(s.running, j.Name)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.running = slices.DeleteFunc(s.running, func(n string) bool { return n == j.Name })
			s.mu.Unlock()
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
	})
}

// runJob runs j, turning a panic into an error logged at error level, so
// that the guards of wrap are always released.
func (s *Scheduler) runJob(ctx context.Context, j Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("job %s panicked: %v", j.Name, r)
			s.log.Error().Str("region", j.Name).Str("stack", string(debug.Stack())).Err(err).Msg("job panicked")
		}
	}()
	return j.Run(ctx)
}

// Start starts firing the entries in the background and logs each entry's
// next run time. It returns at once.
func (s *Scheduler) Start() {
	s.cron.Start()
	for _, e := range s.Entries(time.Now()) {
		s.log.Info().Str("region", e.Name).Time("next_run", e.Next.UTC()).Msg("scheduled")
	}
}

// Stop stops the scheduler: no job starts from now on (ticks waiting for a
// concurrency slot give up), and running jobs may finish until ctx is done
// (the grace period); then their contexts are cancelled with cause
// ErrGraceExpired and Stop waits for them to return. It returns nil when
// every job finished within the grace period, else ErrGraceExpired.
// Calling Stop again waits again and returns the same way.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopping) })
	done := s.cron.Stop().Done()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.log.Warn().Msg("grace period over: cancelling running jobs")
	s.cancelJobs(ErrGraceExpired)
	<-done
	return ErrGraceExpired
}

// Run starts the scheduler and runs until ctx is done or a job reports a
// fatal error (Options.Fatal), then stops with the grace period
// (Options.Grace). It returns nil after a stop caused by ctx, whether or not
// jobs had to be cancelled, and the fatal error otherwise.
func (s *Scheduler) Run(ctx context.Context) error {
	s.Start()
	var err error
	select {
	case <-ctx.Done():
		s.log.Info().Int64("grace_ms", s.opts.Grace.Milliseconds()).Msg("stopping: no new runs; waiting for running ones")
	case err = <-s.fatal:
		s.log.Error().Err(err).Int64("grace_ms", s.opts.Grace.Milliseconds()).Msg("stopping on a fatal error")
	}
	gctx, cancel := context.WithTimeout(context.Background(), s.opts.Grace)
	defer cancel()
	s.Stop(gctx)
	s.cancelJobs(context.Canceled) // every job has returned; release the context
	s.log.Info().Msg("scheduler stopped")
	return err
}

// cronLogger adapts zerolog to cron.Logger: Info at debug level, Error
// (recovered panics) at error level.
type cronLogger struct{ log zerolog.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Debug().Str("component", "cron").Fields(kv).Msg(msg)
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Str("component", "cron").Err(err).Fields(kv).Msg(msg)
}
