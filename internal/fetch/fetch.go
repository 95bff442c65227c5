// Package fetch is the run pipeline: for each API call of a region's run it
// reserves the call's weighted cost from the quota limiter, applies the call
// site's fail-open/fail-closed policy when the limiter backend is
// unreachable, sends the call with the google.golang.org/api/youtube/v3
// client, and stores each page in one transaction. A denial stops the run
// cleanly (no sleeping); the run record says why and when to retry.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Call site names: the API methods, as keys of the cost table and policies.
const (
	MethodVideosList     = "videos.list"
	MethodSearchList     = "search.list"
	MethodChannelsList   = "channels.list"
	MethodCategoriesList = "videoCategories.list"
)

// batchSize is the most ids one videos.list / channels.list call takes.
const batchSize = 50

// maxChartResults is the most videos chart=mostPopular returns per region
// (DESIGN.md §3: "returns at most 200 videos (4 pages)").
const maxChartResults = 200

// NewService builds a youtube/v3 client for apiKey; endpoint "" means
// Google's, otherwise e.g. the emulator's "http://127.0.0.1:8080/". No
// Application Default Credentials are looked up.
func NewService(ctx context.Context, apiKey, endpoint string) (*youtube.Service, error) {
	opts := []option.ClientOption{option.WithAPIKey(apiKey), option.WithUserAgent("trendfetch")}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	svc, err := youtube.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create YouTube client: %w", Redact(err))
	}
	return svc, nil
}

// Runner runs one region at a time. All fields are required except Log,
// Now, Timeout, PageSize, the retry settings, the enrichment settings and
// the hooks.
type Runner struct {
	Service *youtube.Service
	Limiter *quota.Limiter
	Store   *store.Store
	// Credential is the quota scope name (never the key).
	Credential string
	// Policy returns a call site's backend-failure policy.
	Policy func(method string) config.Policy
	// PageSize is maxResults per page, 1-50 (default 50).
	PageSize int64
	// Timeout bounds one API request (default 30 s).
	Timeout time.Duration
	// Retries is how many more attempts a transient failure gets (0 = none);
	// RetryBackoff is the first backoff (doubling, full jitter).
	Retries      int
	RetryBackoff time.Duration
	// ChartCategories lists, per region, videoCategoryId values fetched as
	// narrowed charts after the whole chart.
	ChartCategories map[string][]string
	// Searches returns the search.list queries configured for a region.
	Searches func(region string) []config.Search
	// ChannelsRefresh > 0 enables channels.list enrichment of channels whose
	// stored data is older than it.
	ChannelsRefresh time.Duration
	// CategoriesRefresh > 0 enables videoCategories.list for a region whose
	// stored categories are older than it.
	CategoriesRefresh time.Duration
	// DeferChannels keeps a remainder of fewer than 50 stale channels for the
	// next Run of this Runner instead of sending a partial batch, so a
	// multi-region invocation sends only full batches where the data allows.
	// The caller clears it before the last region.
	DeferChannels bool
	// LeaseTTL is the run lease's time to live (default 2 min), renewed every
	// third of it while the run lasts.
	LeaseTTL time.Duration
	Log      zerolog.Logger
	// Now is the clock of run records (default time.Now). Quota decisions use
	// the backend's clock, never this one.
	Now func() time.Time
	// OnCall, when set, is told of every API call sent: the method (call
	// site), the HTTP status (0 when no answer arrived) and its latency.
	OnCall func(method string, status int, latency time.Duration)
	// OnRun, when set, is told of every finished run record.
	OnRun func(run store.Run)

	// pendingChannels are stale channel ids waiting for a full batch
	// (DeferChannels); pendingSet de-duplicates them.
	pendingChannels []string
	pendingSet      map[string]bool
}

// runState is what one run accumulates.
type runState struct {
	run *store.Run
	log zerolog.Logger
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
// searches, then channel enrichment (when enabled), and records the run. It
// returns the finished run record and nil on success, a *quota.LeaseHeldError
// when another process is running the region (nothing recorded), a
// *StopError on a clean stop, a *CredentialError when the key is rejected,
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

	ctx, release, leaseErr := r.lease(ctx, log, region, fmt.Sprintf("%s pid %d", host, run.PID))
	if leaseErr != nil && !errors.Is(leaseErr, quota.ErrUnavailable) {
		return run, leaseErr
	}
	defer release()
	id, err := r.Store.StartRun(ctx, run)
	if err != nil {
		return run, fmt.Errorf("cannot record run start: %w", err)
	}
	run.ID = id
	log = log.With().Int64("run", id).Logger()
	// Holding the lease, any other run of this region still marked running
	// belongs to a process that died.
	if n, err := r.Store.AbandonRuns(ctx, r.Credential, region, run.StartedAt); err != nil {
		log.Warn().Err(err).Msg("cannot mark abandoned runs")
	} else if n > 0 {
		log.Warn().Int("runs", n).Msg("earlier runs of this region were still marked running: marked abandoned")
	}
	st := &runState{run: &run, log: log, videos: map[string]store.Video{}, channelSet: map[string]bool{}, calls: map[string]int{},
		limiterDown: leaseErr}

	runErr := r.ingest(ctx, st)

	run.FinishedAt = now()
	run.Calls = st.calls
	run.Outcome, run.Reason = outcome(ctx, runErr)
	var stop *StopError
	if errors.As(runErr, &stop) {
		run.RetryAfter, run.RetryAt = stop.RetryAfter, stop.RetryAt
	}
	// The record must be written even when ctx was cancelled by a signal.
	if err := r.Store.FinishRun(context.WithoutCancel(ctx), run); err != nil {
		return run, errors.Join(runErr, fmt.Errorf("cannot record run end: %w", err))
	}
	if r.OnRun != nil {
		r.OnRun(run)
	}
	ev := log.Info()
	switch run.Outcome {
	case store.OutcomeDenied:
		ev = log.Warn().Int64("retry_after_ms", run.RetryAfter.Milliseconds()).Time("retry_at", run.RetryAt)
	case store.OutcomeFailed, store.OutcomeInterrupted:
		ev = log.Error()
	}
	ev.Int("pages", run.Pages).Int("videos", run.Videos).Interface("units", run.Units).
		Int("unmetered", run.Unmetered).Int64("duration_ms", run.FinishedAt.Sub(run.StartedAt).Milliseconds()).
		Str("outcome", string(run.Outcome)).Str("reason", run.Reason).Msg("run finished")
	return run, runErr
}

// ingest runs the call sites of one region in order.
func (r *Runner) ingest(ctx context.Context, st *runState) error {
	if r.CategoriesRefresh > 0 {
		if err := r.categories(ctx, st); err != nil {
			return err
		}
	}
	if err := r.chart(ctx, st, ""); err != nil {
		return err
	}
	for _, cat := range r.ChartCategories[st.run.Region] {
		if err := r.chart(ctx, st, cat); err != nil {
			return err
		}
	}
	if r.Searches != nil {
		if err := r.searches(ctx, st, r.Searches(st.run.Region)); err != nil {
			return err
		}
	}
	if r.ChannelsRefresh > 0 {
		return r.channels(ctx, st)
	}
	return nil
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

// reserve reserves one call of method before it is sent. It returns nil
// when the call may go ahead (admitted, or unmetered under fail-open), a
// *StopError on denial or fail-closed, or a configuration error.
func (r *Runner) reserve(ctx context.Context, st *runState, method string) error {
	run, log := st.run, st.log
	if st.limiterDown == nil {
		d, err := r.Limiter.Reserve(ctx, r.Credential, method)
		switch {
		case err == nil && d.Allowed:
			cs, _ := r.Limiter.Charges(method)
			for _, c := range cs {
				run.Units[c.Bucket] += c.Units
			}
			return nil
		case err == nil:
			return Denied(run.Region, method, d)
		case errors.Is(err, quota.ErrUnavailable):
			if ctx.Err() != nil {
				return ctx.Err()
			}
			st.limiterDown = err
			log.Warn().Err(err).Msg("quota backend unavailable; applying call site policies for the rest of this run")
		default:
			return err
		}
	}
	if r.Policy(method) == config.FailClosed {
		return &StopError{Region: run.Region, Reason: fmt.Sprintf("limiter unavailable (%s is fail-closed)", method)}
	}
	run.Unmetered++
	log.Debug().Str("method", method).Msg("limiter unavailable: call sent unmetered (fail-open)")
	return nil
}

// Denied builds the *StopError of a denied reservation of method for
// region ("" outside a run), with the decision's Retry-After.
func Denied(region, method string, d quota.Decision) *StopError {
	reason := fmt.Sprintf("quota denied %s by bucket %q", method, d.DeniedBucket)
	if d.Exhausted {
		reason = "quota exhausted upstream (403 quotaExceeded) until " + d.ExhaustedUntil.UTC().Format(time.RFC3339)
	}
	base := d.Now
	if base.IsZero() {
		base = time.Now()
	}
	return &StopError{Region: region, Reason: reason, RetryAfter: d.RetryAfter, RetryAt: base.Add(d.RetryAfter)}
}

// apiError classifies an error answer of the API (DESIGN.md §3).
func (r *Runner) apiError(ctx context.Context, st *runState, method string, err error) error {
	run := st.run
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return fmt.Errorf("%s for %s failed: %w", method, run.Region, err)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	switch {
	case reason == "quotaExceeded" || reason == "dailyLimitExceeded":
		now := r.now()
		until := quota.NextPacificMidnight(now)
		if merr := r.Limiter.MarkExhausted(context.WithoutCancel(ctx), r.Credential, until); merr != nil {
			st.log.Warn().Err(merr).Msg("cannot mark the credential exhausted in the quota backend")
		}
		return &StopError{Region: run.Region, Reason: "the API answered 403 quotaExceeded: the project's daily quota is spent", RetryAfter: until.Sub(now), RetryAt: until}
	case reason == "keyInvalid" || strings.Contains(ge.Body, "API_KEY_INVALID"):
		return &CredentialError{Credential: r.Credential, Reason: "keyInvalid"}
	case reason == "videoChartNotFound":
		return fmt.Errorf("region %s has no mostPopular chart (the API answered %d videoChartNotFound)", run.Region, ge.Code)
	}
	return fmt.Errorf("%s for %s: API answered HTTP %d %s: %s", method, run.Region, ge.Code, reason, ge.Message)
}

// Redact removes API keys from the URL quoted by a *url.Error; other errors
// pass unchanged. Secrets must never reach logs or run records.
func Redact(err error) error {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(url redacted)"
	}
	q := u.Query()
	if q.Has("key") {
		q.Set("key", "REDACTED")
		u.RawQuery = q.Encode()
	}
	u.User = nil
	return u.String()
}

// ConvertVideo maps an API video resource to the stored shape.
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

func i64(u uint64) *int64 {
	v := int64(u)
	return &v
}
