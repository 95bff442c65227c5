// Package fetch is the run pipeline (docs/design.md §5): Runner.Run records the run, under the
// region's lease its caller took, and runs each step (steps.go); every API call goes through
// call (call.go), the call-site protocol of docs/design.md §2 and §4 (reserve, send, refund,
// classify, retry).
package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"reflect"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// NewService builds a youtube/v3 client for apiKey against endpoint ("" for
// Google's, e.g. the emulator's "http://127.0.0.1:8080/") without Application
// Default Credentials; response bodies capped (MaxResponseBytes), redirects
// refused (the key in the query goes to api.endpoint only; apiError names a 3xx).
func NewService(ctx context.Context, apiKey, endpoint string) (*youtube.Service, error) {
	opts := []option.ClientOption{option.WithAPIKey(apiKey), option.WithUserAgent("trendfetch")}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	client, _, err := htransport.NewClient(ctx, opts...)
	var svc *youtube.Service
	if err == nil {
		client.Transport = capBody{client.Transport}
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		svc, err = youtube.NewService(ctx, append(opts[2:], option.WithHTTPClient(client))...) // opts[2:]: the endpoint
	}
	if err != nil {
		return nil, fmt.Errorf("cannot create YouTube client: %w", redact(err))
	}
	return svc, nil
}

// Runner runs one region at a time; Run never changes it (a copy per job is
// safe). Service, Limiter, Store, Credential and Policy are required.
type Runner struct {
	Service *youtube.Service
	Limiter *quota.Limiter
	Store   store.RunStore
	// Credential is the quota scope name (never the key).
	Credential string
	// Policy returns a call site's backend-failure policy.
	Policy func(method string) callsite.Policy
	// Reserve, when set, is this host's outage reserve: refilled at each run's start while the
	// backend answers, spent by call sites of policy reserve while it does not.
	Reserve *quota.OutageReserve
	// Settings are the run's tunables; Run applies their defaults.
	Settings Settings
	// Searches returns the search.list queries of a region (nil: none).
	Searches func(region string) []Search
	// Backlog, when set, carries stale channels across the runs of one invocation.
	Backlog *Backlog
	Log     zerolog.Logger
	// Now is the clock of run records (default time.Now); quota decisions use the backend's clock.
	Now func() time.Time
	// OnCall, when set, is told of every API call sent: the call site, the
	// HTTP status (0 when no answer arrived) and its latency.
	OnCall func(method string, status int, latency time.Duration)
	// OnRun, when set, is told of every finished run record.
	OnRun func(run store.Run)
	// StoreName names the store in errors (default "the store").
	StoreName string
	// Scrub, when set, removes secrets from the run's reason and the quota
	// marks' text (an error body may echo the key).
	Scrub func(string) string
	// Captured, when set, removes the API key from every string of what the API returned and of the
	// search queries, which are otherwise stored as captured (docs/operations.md "Secrets").
	Captured func(string) string
}

// scrub applies r.Scrub to text.
func (r *Runner) scrub(text string) string {
	if r.Scrub == nil {
		return text
	}
	return r.Scrub(text)
}

// scrubTexts applies r.Captured, in place, to every string reachable from p
// (a pointer, slice or string), fields added later included.
func (r *Runner) scrubTexts(p any) {
	f := r.Captured
	if f == nil {
		return
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			if v.CanSet() {
				v.SetString(f(v.String()))
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(p))
}

// runState is what one run accumulates.
type runState struct {
	run *store.Run
	log zerolog.Logger
	set Settings // with defaults applied
	// videos fetched in this run by id: never fetched twice.
	videos map[string]store.Video
	// channelOrder lists the channel ids of fetched videos, first seen first.
	channelOrder []string
	calls        map[string]int
	// limiterDown is the first backend failure of this run: later calls apply
	// their policy at once (docs/design.md §4, short timeouts).
	limiterDown error
	// note is the run's reason when it has none (a step stopped, the run went on).
	note string
	// storedUnits is the sum of run.Units at the run's last stored write.
	storedUnits int64
}

// stored notes a write of what the run fetched: the units spent so far are kept, or when err is not
// nil returned as lost in the run's *StoreError (what: the write, e.g. "cannot store channels").
func (r *Runner) stored(st *runState, err error, what string) error {
	var spent int64
	for _, u := range st.run.Units {
		spent += u
	}
	if err != nil {
		return &StoreError{Store: cmp.Or(r.StoreName, "the store"), Region: st.run.Region,
			Units: spent - st.storedUnits, Err: fmt.Errorf("%s: %w", what, err)}
	}
	st.storedUnits = spent
	return nil
}

// StopError reports a run stopped cleanly: the limiter denied a reservation,
// a fail-closed call site found it unavailable, or the API answered
// quotaExceeded. The CLI exits 75; the next tick resumes.
type StopError struct {
	Region string
	// Reason is one line, e.g. `quota denied by bucket "units"`.
	Reason string
	// RetryAfter is how long until the denied call can succeed (0 if
	// unknown); RetryAt the matching wall-clock time.
	RetryAfter time.Duration
	RetryAt    time.Time
	// Site, when set, is the call site whose own Google quota is spent
	// (quota.Mark): its step stops, noted on the run, and the run goes on.
	Site string
}

// ExitCode is exitcode.TempFail: a clean stop that the next tick resumes.
func (e *StopError) ExitCode() int { return exitcode.TempFail }

func (e *StopError) Error() string {
	msg := "stopped: " + e.Reason
	if e.Region != "" {
		msg = "region " + e.Region + " " + msg
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf("; retry after %s (at %s)", roundUp(e.RetryAfter), e.RetryAt.UTC().Format(time.RFC3339))
	}
	return msg
}

// StoreError reports that the store failed while a run was storing what it
// had fetched; what was stored before is kept and the run stops (exit 1).
// Units is what the run spent since its last stored write (docs/design.md §10a).
type StoreError struct {
	Store, Region string
	Units         int64
	// RecordLost is set when the run record could not be finished either.
	RecordLost bool
	Err        error
}

func (e *StoreError) Error() string {
	unit := "units"
	if e.Units == 1 {
		unit = "unit"
	}
	msg := fmt.Sprintf("%s lost mid-run: %d %s spent, not stored; region %s: %v", e.Store, e.Units, unit, e.Region, e.Err)
	if e.RecordLost {
		msg += "; the run record stays running until the region's next run marks it abandoned"
	}
	return msg
}

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// CredentialError reports that the API rejected the credential's key
// (keyInvalid / API_KEY_INVALID), naming the credential, never the key (exit 2).
type CredentialError struct {
	Credential string
	Reason     string
}

// ExitCode is exitcode.Usage: the key needs an operator, not a retry.
func (e *CredentialError) ExitCode() int { return exitcode.Usage }

func (e *CredentialError) Error() string {
	return fmt.Sprintf("credential %q: the API rejected its key (%s); check the key in its env variable or key file", e.Credential, e.Reason)
}

// roundUp rounds d up to whole seconds for display (never early).
func roundUp(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// Lease is how a run stands with its region's run lease, which the caller (the engine) takes
// before Run (docs/design.md §5, leases): the zero value holds it.
type Lease struct {
	// Down, when not nil, is the quota backend's failure that kept the caller from taking the
	// lease: the run goes on without one, marks no earlier run abandoned (without the lease it
	// cannot tell a live run from a dead one) and its calls apply their policies at once.
	Down error
}

// ErrLeaseLost is the cause the caller gives a run's context when the run's lease is lost
// (wrapped with the lease's own error): the run is recorded failed, not interrupted.
var ErrLeaseLost = errors.New("run lease lost")

// WriteTimeout bounds each write of a run's records: they outlive the run's own context (a run
// cancelled by a signal is still recorded), not a database that stopped answering mid-run.
var WriteTimeout = time.Minute

// detached runs write with ctx without its cancellation, cancelled WriteTimeout from now or when
// write returns (a timer left running holds its context for WriteTimeout: a scheduler's memory
// grew 28% over 1,000 runs, docs/scale.md).
func detached(ctx context.Context, write func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
	defer cancel()
	return write(ctx)
}

// Run runs region's steps and records the run, under the lease the caller took. It returns
// the run record and nil; a *StopError; a *CredentialError; an error wrapping
// context.Canceled (recorded interrupted, or failed when ctx's cause wraps ErrLeaseLost) or
// another (recorded failed). Stored pages are always kept.
func (r *Runner) Run(ctx context.Context, region string, lease Lease) (store.Run, error) {
	st, err := r.start(ctx, region, lease)
	if err != nil {
		return *st.run, err
	}
	runErr := r.ingest(ctx, st)
	r.conclude(ctx, st, runErr)
	// The record must be written even when ctx was cancelled by a signal.
	err = detached(ctx, func(ctx context.Context) error { return r.Store.FinishRun(ctx, *st.run) })
	if errors.Is(err, store.ErrPagesLost) { // recorded failed: say so
		st.run.Outcome, st.run.Reason = store.OutcomeFailed, err.Error()
		runErr, err = errors.Join(runErr, err), nil
	}
	if err != nil {
		if lost, ok := errors.AsType[*StoreError](runErr); ok {
			lost.RecordLost = true
			return *st.run, runErr
		}
		return *st.run, errors.Join(runErr, fmt.Errorf("cannot record run end: %w", err))
	}
	if r.OnRun != nil {
		r.OnRun(*st.run)
	}
	logFinished(st)
	return *st.run, runErr
}

// start records the run of region as running and returns its state, the settings' defaults
// applied; only a lease's holder marks earlier runs of the region abandoned.
func (r *Runner) start(ctx context.Context, region string, lease Lease) (*runState, error) {
	host, _ := os.Hostname()
	run := &store.Run{Credential: r.Credential, Region: region, StartedAt: r.now(), Units: map[string]int64{},
		Outcome: store.OutcomeRunning, PID: os.Getpid(), Host: host}
	set, d := r.Settings, callsite.RunDefaults()
	set.PageSize = cmp.Or(max(set.PageSize, 0), d.PageSize)
	set.Timeout = cmp.Or(max(set.Timeout, 0), d.Timeout)
	st := &runState{run: run, log: r.Log.With().Str("region", region).Str("credential", r.Credential).Logger(),
		set: set, videos: map[string]store.Video{}, calls: map[string]int{}, limiterDown: lease.Down}
	id, err := r.Store.StartRun(ctx, *run)
	if err != nil {
		return st, fmt.Errorf("cannot record run start: %w", err)
	}
	run.ID = id
	st.log = st.log.With().Int64("run", id).Logger()
	if lease.Down != nil {
		return st, nil
	}
	r.refill(ctx, st)
	if n, err := r.Store.AbandonRuns(ctx, r.Credential, region, run.StartedAt); err != nil {
		st.log.Warn().Err(err).Msg("cannot mark abandoned runs")
	} else if n > 0 {
		st.log.Warn().Int("runs", n).Msg("earlier runs of this region were still marked running: marked abandoned")
	}
	return st, nil
}

// refill gives back and refills this host's outage reserve while the backend answers
// (docs/quota.md, "The outage reserve"); a failure leaves the reserve as it was.
func (r *Runner) refill(ctx context.Context, st *runState) {
	if r.Reserve == nil {
		return
	}
	rs, err := r.Limiter.Refill(ctx, r.Reserve, r.Credential)
	if err != nil {
		st.log.Warn().Err(err).Msg("cannot refill this host's outage reserve: it stays as it was")
		return
	}
	st.log.Debug().Interface("held", rs.Held).Msg("outage reserve refilled")
}

// conclude sets the run's end, calls, outcome and one-line reason (scrubbed) from runErr.
func (r *Runner) conclude(ctx context.Context, st *runState, runErr error) {
	run := st.run
	run.FinishedAt = r.now()
	run.Calls = st.calls
	stop, isStop := errors.AsType[*StopError](runErr)
	switch {
	case runErr == nil && run.Unmetered > 0:
		run.Outcome = store.OutcomeSuccessUnmetered
		run.Reason = fmt.Sprintf("%d calls sent unmetered (quota backend unavailable, fail-open): %v", run.Unmetered, st.limiterDown)
	case runErr == nil:
		run.Outcome = store.OutcomeSuccess
	case isStop:
		run.Outcome, run.Reason = store.OutcomeDenied, stop.Reason
		run.RetryAfter, run.RetryAt = stop.RetryAfter, stop.RetryAt
	case errors.Is(context.Cause(ctx), ErrLeaseLost):
		run.Outcome, run.Reason = store.OutcomeFailed, context.Cause(ctx).Error()
	case errors.Is(runErr, context.Canceled):
		run.Outcome, run.Reason = store.OutcomeInterrupted, "interrupted"
		if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
			run.Reason = cause.Error()
		}
	default:
		run.Outcome, run.Reason = store.OutcomeFailed, runErr.Error()
	}
	run.Reason = cmp.Or(run.Reason, st.note)
	run.Reason = r.scrub(run.Reason)
}

// logFinished logs the finished run once: a denial or an interruption (asked for: a signal)
// at warn level, a failure at error level.
func logFinished(st *runState) {
	run, log := st.run, st.log
	ev := log.Info()
	switch run.Outcome {
	case store.OutcomeDenied:
		ev = log.Warn().Int64("retry_after_ms", run.RetryAfter.Milliseconds())
		if !run.RetryAt.IsZero() {
			ev = ev.Time("retry_at", run.RetryAt.UTC())
		}
	case store.OutcomeInterrupted:
		ev = log.Warn()
	case store.OutcomeFailed:
		ev = log.Error()
	}
	ev.Int("pages", run.Pages).Int("videos", run.Videos).Interface("units", run.Units).
		Int("unmetered", run.Unmetered).Int64("duration_ms", run.FinishedAt.Sub(run.StartedAt).Milliseconds()).
		Str("outcome", string(run.Outcome)).Str("reason", run.Reason).Msg("run finished")
}

// ingest runs the steps of one region in order.
func (r *Runner) ingest(ctx context.Context, st *runState) error {
	if st.set.CategoriesRefresh > 0 {
		if err := r.categories(ctx, st); err != nil {
			return err
		}
	}
	for _, cat := range append([]string{""}, st.set.ChartCategories[st.run.Region]...) {
		if err := r.chart(ctx, st, cat); err != nil {
			return err
		}
	}
	if err := r.sampleStats(ctx, st); err != nil {
		return err
	}
	if r.Searches != nil {
		if err := r.searches(ctx, st, r.Searches(st.run.Region)); err != nil {
			return err
		}
	}
	if st.set.ChannelsRefresh > 0 {
		if err := r.channels(ctx, st); err != nil {
			return err
		}
	}
	return r.refreshText(ctx, st)
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// i64 is u as a stored count, or nil (unknown) when it does not fit an int64
// (the client decodes counts as uint64; never store one negative).
func i64(u uint64) *int64 {
	if u > math.MaxInt64 {
		return nil
	}
	return new(int64(u))
}

// Settings are the tunables of a run. A PageSize or Timeout <= 0 means its default
// (callsite.RunDefaults); zero Retries means no retry; a zero interval or cap turns its step off.
type Settings struct {
	// PageSize is maxResults per chart page (1-50); Timeout bounds one request.
	PageSize int64
	Timeout  time.Duration
	// Retries is how many more attempts a transient failure gets, after a
	// first backoff of RetryBackoff (doubling, full jitter).
	Retries      int
	RetryBackoff time.Duration
	// ChartCategories lists, per region, videoCategoryId values fetched as
	// narrowed charts after the whole chart.
	ChartCategories map[string][]string
	// ChannelsRefresh and CategoriesRefresh: channels and a region's
	// categories are fetched when their stored data is older.
	ChannelsRefresh, CategoriesRefresh time.Duration
	// StatsTrackFor: videos on the region's chart within it, but not on the chart just fetched, are
	// sampled with videos.batchGetStats once their newest statistics are StatsEvery old.
	StatsTrackFor, StatsEvery time.Duration
	// TextCutoff, when set, turns the text step on (store.policy amended):
	// text older than TextCutoff(now) is refreshed or removed.
	TextCutoff func(now time.Time) time.Time
	// TextRefreshPerDay caps the credential's videos.list.refresh calls in 24
	// hours (store.refresh_per_day; 0: old text is only removed).
	TextRefreshPerDay int
}

// Search is one search.list query of a region's run: type=video, q=Q,
// order=Order ("" = the API's relevance), publishedAfter = run start minus
// PublishedAfter (0 = no limit), up to MaxPages pages of 50 (0 = 1).
type Search struct {
	Q              string
	Order          string
	PublishedAfter time.Duration
	MaxPages       int
}

// Backlog carries stale channel ids to the next runs of one invocation, so
// channels.list is sent in full batches of 50; never shared by concurrent runs.
type Backlog struct {
	// Hold keeps a remainder of fewer than 50 for the next run; the caller
	// clears it before the last region.
	Hold bool
	ids  []string
}
