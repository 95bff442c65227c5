package fetch

import (
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
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// NewService builds a youtube/v3 client for apiKey; endpoint "" means
// Google's, otherwise e.g. the emulator's "http://127.0.0.1:8080/". No
// Application Default Credentials are looked up.
func NewService(ctx context.Context, apiKey, endpoint string) (*youtube.Service, error) {
	opts := []option.ClientOption{option.WithAPIKey(apiKey), option.WithUserAgent("trendfetch")}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	// The library's client (key, user agent), with every response body
	// capped: a hostile or broken server must not grow memory without bound.
	client, _, err := htransport.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create YouTube client: %w", Redact(err))
	}
	client.Transport = capBody{base: client.Transport, max: MaxResponseBytes}
	// Requests carry the key in their query: they go to api.endpoint and
	// nowhere else. A redirect is answered to the caller as the 3xx it is
	// (apiError names the status, never the location).
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	opts = []option.ClientOption{option.WithHTTPClient(client)}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	svc, err := youtube.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create YouTube client: %w", Redact(err))
	}
	return svc, nil
}

// Runner runs one region at a time. It holds the run's dependencies and
// Settings and is never changed by Run, so a copy per scheduled job is
// safe; what a run accumulates lives in that run (runState). Service,
// Limiter, Store, Credential and Policy are required; the rest is optional.
type Runner struct {
	Service *youtube.Service
	Limiter *quota.Limiter
	Store   store.Backend
	// Credential is the quota scope name (never the key).
	Credential string
	// Policy returns a call site's backend-failure policy.
	Policy func(method string) callsite.Policy
	// Settings are the run's tunables; Run applies WithDefaults.
	Settings Settings
	// Searches returns the search.list queries of a region (nil: none).
	Searches func(region string) []Search
	// Backlog, when set, carries stale channels across the runs of one
	// invocation (see Backlog).
	Backlog *Backlog
	Log     zerolog.Logger
	// Now is the clock of run records (default time.Now). Quota decisions use
	// the backend's clock, never this one.
	Now func() time.Time
	// OnCall, when set, is told of every API call sent: the method (call
	// site), the HTTP status (0 when no answer arrived) and its latency.
	OnCall func(method string, status int, latency time.Duration)
	// OnRun, when set, is told of every finished run record.
	OnRun func(run store.Run)
	// StoreName names the store in errors: "PostgreSQL" or "SQLite"
	// (default "the store").
	StoreName string
	// Skip, when set, is asked once the run holds its region's lease (or
	// goes on without one, fail-open), before the run is recorded or any
	// unit reserved: a non-nil error ends Run at once with that error,
	// nothing recorded or spent. The lease makes the answer hold for the
	// whole run: a run of the region that finishes before it is seen
	// (docs/design.md §10a, once per tick).
	Skip func(ctx context.Context, region string) error
	// Scrub, when set, removes secrets from every text the run stores: its
	// reason (an upstream error body may echo the request URL, key
	// included) and each string of what the API returned (videos, channels,
	// categories) and of the search queries (scrubTexts).
	Scrub func(string) string
}

// scrubTexts applies r.Scrub, in place, to every string reachable from p (a
// pointer to a struct, a slice or a string): every field of what is stored,
// including fields added later.
func (r *Runner) scrubTexts(p any) {
	if r.Scrub == nil {
		return
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			if v.CanSet() {
				v.SetString(r.Scrub(v.String()))
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
	// set is the Runner's Settings with defaults applied.
	set Settings
	// videos fetched in this run by id: never fetched twice.
	videos map[string]store.Video
	// channelOrder lists the channel ids of fetched videos, first seen first.
	channelOrder []string
	channelSet   map[string]bool
	calls        map[string]int
	// limiterDown is set after the first backend failure in this run, so
	// later calls apply their policy at once instead of waiting a timeout
	// each; the next run tries the backend again.
	limiterDown error
	// note is kept as the run's reason when it otherwise has none: a step
	// that stopped without failing the run (the statistics step).
	note string
	// storedUnits is the sum of run.Units at the run's last stored write.
	storedUnits int64
}

// spent is the sum of the run's units over its buckets.
func (st *runState) spent() int64 {
	var n int64
	for _, u := range st.run.Units {
		n += u
	}
	return n
}

// stored notes a stored write of what the run fetched: the units spent so
// far are kept.
func (st *runState) stored() { st.storedUnits = st.spent() }

// lost is the *StoreError of a failed write of what the run fetched: the
// units spent since its last stored write are spent and not stored.
func (r *Runner) lost(st *runState, err error) error {
	name := r.StoreName
	if name == "" {
		name = "the store"
	}
	return &StoreError{Store: name, Region: st.run.Region, Units: st.spent() - st.storedUnits, Err: err}
}

func (st *runState) remember(v store.Video) {
	st.videos[v.ID] = v
	if v.ChannelID != "" && !st.channelSet[v.ChannelID] {
		st.channelSet[v.ChannelID] = true
		st.channelOrder = append(st.channelOrder, v.ChannelID)
	}
}

// StopError reports a run stopped cleanly before finishing: the limiter
// denied a reservation, a fail-closed call site found the limiter
// unavailable, or the API answered quotaExceeded. The CLI exits 75
// (EX_TEMPFAIL); the next cron tick resumes.
type StopError struct {
	Region string
	// Reason is one line, e.g. `quota denied by bucket "units"`.
	Reason string
	// RetryAfter is how long until the denied call can succeed (0 if unknown).
	RetryAfter time.Duration
	// RetryAt is the wall-clock time matching RetryAfter.
	RetryAt time.Time
	// Site, when set, is the call site whose own Google quota is spent
	// (quota.Mark): its step stops, noted on the run, and the run goes on.
	Site string
}

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
// had fetched (PostgreSQL lost mid-run, a disk error). What was stored
// before is kept; the run stops. Units is what the run spent since its
// last stored write, answers now lost: at most the page in flight and its
// retries (docs/design.md §10a). The CLI exits 1.
type StoreError struct {
	Store, Region string
	Units         int64
	// RecordLost is set when the run record could not be finished either:
	// it stays running until the region's next run marks it abandoned.
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
// (keyInvalid / API_KEY_INVALID). It names the credential, never the key.
// The CLI exits 2 (configuration error).
type CredentialError struct {
	Credential string
	Reason     string
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("credential %q: the API rejected its key (%s); check the key in its env variable or key file", e.Credential, e.Reason)
}

// roundUp rounds d up to whole seconds for display (never early).
func roundUp(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// Run ingests region: categories (when due), the chart=mostPopular chart
// page by page (and any configured category charts), the configured
// searches, channel enrichment (when enabled), then the text step (store.policy
// amended: refreshText), and records the run. It
// returns the finished run record and nil on success, a *quota.LeaseHeldError
// when another process is running the region (nothing recorded), Skip's
// error (nothing recorded), a *StopError on a clean stop, a *CredentialError when the key is rejected,
// an error wrapping context.Canceled when ctx was cancelled (the run is
// recorded as interrupted), or another error (recorded as failed). Every page
// already stored is kept in every case.
func (r *Runner) Run(ctx context.Context, region string) (store.Run, error) {
	now := r.now
	host, _ := os.Hostname()
	run := store.Run{
		Credential: r.Credential,
		Region:     region,
		StartedAt:  now(),
		Units:      map[string]int64{},
		Outcome:    store.OutcomeRunning,
		PID:        os.Getpid(),
		Host:       host,
	}
	log := r.Log.With().Str("region", region).Str("credential", r.Credential).Logger()
	set := r.Settings.WithDefaults()

	ctx, release, leaseErr := r.lease(ctx, log, region, set.LeaseTTL)
	if leaseErr != nil && !errors.Is(leaseErr, quota.ErrUnavailable) && !errors.Is(leaseErr, quota.ErrOutOfMemory) {
		return run, leaseErr
	}
	defer release()
	if r.Skip != nil {
		if err := r.Skip(ctx, region); err != nil {
			return run, err
		}
	}
	id, err := r.Store.StartRun(ctx, run)
	if err != nil {
		return run, fmt.Errorf("cannot record run start: %w", err)
	}
	run.ID = id
	log = log.With().Int64("run", id).Logger()
	// Holding the lease, any other run of this region still marked running
	// belongs to a process that died. Without it (fail-open) another run
	// may be live: only a lease's holder abandons runs.
	if leaseErr == nil {
		if n, err := r.Store.AbandonRuns(ctx, r.Credential, region, run.StartedAt); err != nil {
			log.Warn().Err(err).Msg("cannot mark abandoned runs")
		} else if n > 0 {
			log.Warn().Int("runs", n).Msg("earlier runs of this region were still marked running: marked abandoned")
		}
	}
	st := &runState{run: &run, log: log, set: set, videos: map[string]store.Video{}, channelSet: map[string]bool{}, calls: map[string]int{},
		limiterDown: leaseErr}

	runErr := r.ingest(ctx, st)

	run.FinishedAt = now()
	run.Calls = st.calls
	run.Outcome, run.Reason = outcome(ctx, runErr)
	if run.Outcome == store.OutcomeSuccess && run.Unmetered > 0 {
		run.Outcome = store.OutcomeSuccessUnmetered
		run.Reason = fmt.Sprintf("%d calls sent unmetered (quota backend unavailable, fail-open): %v", run.Unmetered, st.limiterDown)
	}
	if run.Reason == "" {
		run.Reason = st.note
	}
	if r.Scrub != nil {
		run.Reason = r.Scrub(run.Reason)
	}
	var stop *StopError
	if errors.As(runErr, &stop) {
		run.RetryAfter, run.RetryAt = stop.RetryAfter, stop.RetryAt
	}
	// The record must be written even when ctx was cancelled by a signal.
	if err := r.Store.FinishRun(context.WithoutCancel(ctx), run); err != nil {
		var lost *StoreError
		if errors.As(runErr, &lost) {
			lost.RecordLost = true
			return run, runErr
		}
		return run, errors.Join(runErr, fmt.Errorf("cannot record run end: %w", err))
	}
	if r.OnRun != nil {
		r.OnRun(run)
	}
	ev := log.Info()
	switch run.Outcome {
	case store.OutcomeDenied:
		ev = log.Warn().Int64("retry_after_ms", run.RetryAfter.Milliseconds())
		if !run.RetryAt.IsZero() {
			ev = ev.Time("retry_at", run.RetryAt.UTC())
		}
	case store.OutcomeInterrupted:
		ev = log.Warn() // asked for (a signal): not an error
	case store.OutcomeFailed:
		ev = log.Error()
	}
	ev.Int("pages", run.Pages).Int("videos", run.Videos).Interface("units", run.Units).
		Int("unmetered", run.Unmetered).Int64("duration_ms", run.FinishedAt.Sub(run.StartedAt).Milliseconds()).
		Str("outcome", string(run.Outcome)).Str("reason", run.Reason).Msg("run finished")
	return run, runErr
}

// ingest runs the call sites of one region in order.
func (r *Runner) ingest(ctx context.Context, st *runState) error {
	if st.set.CategoriesRefresh > 0 {
		if err := r.categories(ctx, st); err != nil {
			return err
		}
	}
	if err := r.chart(ctx, st, ""); err != nil {
		return err
	}
	for _, cat := range st.set.ChartCategories[st.run.Region] {
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

// outcome maps a run error to its recorded outcome and one-line reason.
func outcome(ctx context.Context, err error) (store.Outcome, string) {
	var stop *StopError
	switch {
	case err == nil:
		return store.OutcomeSuccess, ""
	case errors.As(err, &stop):
		return store.OutcomeDenied, stop.Reason
	case errors.Is(context.Cause(ctx), errLeaseLost):
		return store.OutcomeFailed, context.Cause(ctx).Error()
	case errors.Is(err, context.Canceled):
		reason := "interrupted"
		if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
			reason = cause.Error()
		}
		return store.OutcomeInterrupted, reason
	default:
		return store.OutcomeFailed, err.Error()
	}
}

// ConvertVideo maps an API video resource to the stored shape. Counts are
// as the Go client decoded them (an omitted count reads 0); the call sites
// set the counts a response did not give to nil (omitted.go).
func ConvertVideo(v *youtube.Video) store.Video {
	out := store.Video{ID: v.Id}
	if s := v.Snippet; s != nil {
		out.Title = s.Title
		out.Description = s.Description
		out.ChannelID = s.ChannelId
		out.ChannelTitle = s.ChannelTitle
		out.CategoryID = s.CategoryId
		out.Tags = s.Tags
		if t, err := time.Parse(time.RFC3339, s.PublishedAt); err == nil {
			out.PublishedAt = t
		}
		if s.Thumbnails != nil && s.Thumbnails.Default != nil {
			out.ThumbnailURL = s.Thumbnails.Default.Url
		}
	}
	if cd := v.ContentDetails; cd != nil {
		out.Duration = cd.Duration
	}
	if st := v.Statistics; st != nil {
		out.Views = i64(st.ViewCount)
		out.Likes = i64(st.LikeCount)
		out.Comments = i64(st.CommentCount)
	}
	return out
}

// i64 is u as a stored count, or nil (unknown) when u does not fit in an
// int64: the API sends counts as decimal strings that the Go client decodes
// as uint64, and a count above 2^63-1 must never be stored negative.
func i64(u uint64) *int64 {
	if u > math.MaxInt64 {
		return nil
	}
	v := int64(u)
	return &v
}
