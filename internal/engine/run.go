package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/schedule"
	"github.com/trendfetch/trendfetch/internal/sdnotify"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Runner is the store, limiter and API client wired into one fetch.Runner, the code path of a
// region for `run` and `schedule`, opened by OpenRunner; Close releases it.
type Runner struct {
	// Force runs regions another host captured in this slot (`run --force`; capturedElsewhere).
	Force bool

	e       *Engine
	store   *store.Store
	limiter *quota.Limiter
	fetch   *fetch.Runner
	plan    []schedule.Region // the configured regions' schedules
}

// OpenRunner opens the store (migrating it), the limiter and the configured credential's API
// client. Errors: a missing API key (exit 2), the database or the quota backend cannot be opened.
func (e *Engine) OpenRunner(ctx context.Context) (*Runner, error) {
	c := e.cfg
	plan, err := c.Schedule.Plan(c.Regions)
	if err != nil {
		return nil, err
	}
	cred, err := c.FindCredential(c.Credential)
	if err != nil {
		return nil, err
	}
	key, err := cred.APIKey(e.o.LookupEnv)
	if err != nil {
		return nil, err
	}
	svc, err := fetch.NewService(ctx, key, c.API.Endpoint) // no I/O
	if err != nil {
		return nil, err
	}
	st, err := e.OpenStore(ctx, false)
	if err != nil {
		return nil, err
	}
	lim, err := e.OpenLimiter(false)
	if err != nil {
		st.Close()
		return nil, err
	}
	enabled := func(r config.Refresh) time.Duration { // the interval of an enabled call site, else 0
		if !r.Enabled {
			return 0
		}
		return r.Refresh.Std()
	}
	set := fetch.Settings{PageSize: c.API.PageSize, Timeout: c.API.Timeout.Std(), Retries: c.API.Retries,
		RetryBackoff: c.API.RetryBackoff.Std(), ChartCategories: c.Chart.Categories,
		ChannelsRefresh: enabled(c.Channels), CategoriesRefresh: enabled(c.Categories),
		StatsTrackFor: c.Stats.TrackFor.Std(), StatsEvery: c.Stats.Every.Std()}
	// A policy whose runs refresh old text (amended) gets the text step.
	if p, _, err := store.InForce(ctx, c.Store.Policy, st); err == nil && p.RunsRefreshText() {
		set.TextCutoff = func(now time.Time) time.Time {
			_, text := p.Cutoffs(now)
			return text
		}
		set.TextRefreshPerDay = p.RefreshCalls(c.Store.RefreshPerDay)
	}
	r := &Runner{e: e, store: st, limiter: lim, plan: plan}
	reserve, _ := c.ReserveUnits() // validated by Load: cannot fail
	r.fetch = &fetch.Runner{StoreName: string(st.Engine()), Service: svc, Limiter: lim, Store: st, Credential: cred.Name,
		Policy: c.Policy, Settings: set, Log: e.log, Scrub: e.o.Secrets.String, Captured: e.o.Secrets.Captured,
		Reserve: e.outageReserve(reserve), Searches: func(region string) []fetch.Search {
			var out []fetch.Search
			for _, s := range c.SearchesFor(region) {
				out = append(out, fetch.Search{Q: s.Q, Order: s.Order, PublishedAfter: s.PublishedAfter.Std(), MaxPages: s.MaxPages})
			}
			return out
		}}
	return r, nil
}

// outageReserve is this host's outage reserve of units per bucket (nil: none), kept beside the
// embedded quota backend's database, in the state directory (docs/quota.md, "The outage reserve").
func (e *Engine) outageReserve(units map[string]int64) *quota.OutageReserve {
	if len(units) == 0 {
		return nil
	}
	path := filepath.Join(filepath.Dir(e.cfg.Quota.SQLite.Path), "quota-reserve.json")
	return quota.NewOutageReserve(path, units, e.cfg.Quota.ReserveFor.Std())
}

// Run is `run`: it opens a runner and runs list (Force: no once-per-tick check). When the runner
// cannot be opened, each region's check-in reports the error's exit code, so that a monitor
// hears of a store or quota backend that does not answer.
func (e *Engine) Run(ctx context.Context, list []string, force bool) error {
	r, err := e.OpenRunner(ctx)
	if err != nil {
		for _, region := range list {
			if ci := checkin.Begin(e.cfg.Runs.CheckinURL, region, e.log); ci != nil {
				ci.End(exitcode.Of(ctx, err), checkin.Summary(region, store.Run{Region: region}, err))
			}
		}
		return err
	}
	defer r.Close()
	r.Force = force
	return r.RunRegions(ctx, list)
}

// Close closes the limiter and the store.
func (r *Runner) Close() error { return errors.Join(r.limiter.Close(), r.store.Close()) }

// RunRegions runs each region of list in turn (`run`). A clean stop (quota denial), a rejected
// key or a cancelled ctx ends the list; other failures are collected (joinFailures) and the next
// region runs. Stale channels are batched across the regions; the last sends the remainder.
func (r *Runner) RunRegions(ctx context.Context, list []string) error {
	r.e.applyRetention(ctx, r.store)
	var failed []error
	fr := *r.fetch
	fr.Backlog = &fetch.Backlog{}
	for i, region := range list {
		fr.Backlog.Hold = i < len(list)-1
		_, err := r.run(ctx, &fr, region, r.e.cfg.Runs.MetricsTextfile)
		var stop *fetch.StopError
		switch {
		case err == nil:
			continue
		case errors.As(err, &stop), errors.As(err, new(*fetch.CredentialError)), ctx.Err() != nil:
			if rest := list[i+1:]; len(rest) > 0 {
				r.e.log.Warn().Strs("skipped", rest).Msg("remaining regions not run")
			}
			if stop != nil && len(failed) > 0 {
				return joinFailures(failed) // the stop is logged and recorded; failures rank first
			}
			return err
		}
		failed = append(failed, err) // including a held lease (exit 3 when alone)
	}
	return joinFailures(failed)
}

// RunOne runs region as a tick of `schedule` does (its own channel remainder), logging what the
// runner cannot: a lease held elsewhere, a run that did not start.
func (r *Runner) RunOne(ctx context.Context, region string) (store.Run, error) {
	r.e.applyRetention(ctx, r.store)
	run, err := r.run(ctx, r.fetch, region, "")
	switch {
	case err == nil || run.ID != 0 || ctx.Err() != nil || errors.As(err, new(*fetch.StopError)):
		// The runner logged the run (once, at warn level for a denial).
	case errors.As(err, new(*quota.LeaseHeldError)):
		// Another process (a cron line, another host) runs the region.
		r.e.log.Warn().Err(err).Str("region", region).Msg("region is running elsewhere: tick skipped")
	default:
		r.e.log.Error().Err(err).Str("region", region).Msg("run not started")
	}
	return run, err
}

// run is the one code path of a region's run after the storage policy (docs/design.md §2, "The
// engine"), in order: the run's deadline, the region's lease, the once-per-tick check, the
// fetch, the metrics textfile (with textfile set) and the check-in of the run's exit status.
func (r *Runner) run(ctx context.Context, fr *fetch.Runner, region, textfile string) (store.Run, error) {
	if d := r.e.cfg.Runs.Timeout.Std(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("run of %s exceeded runs.timeout %s", region, d))
		defer cancel()
	}
	ci := checkin.Begin(r.e.cfg.Runs.CheckinURL, region, r.e.log) // nil without runs.checkin_url
	tf := r.textfile(region, textfile)
	run, err := r.fetchHeld(ctx, tf.runner(fr), region)
	tf.write(r.e.log, region)
	if ci != nil {
		ci.End(exitcode.Of(ctx, err), checkin.Summary(region, run, err))
	}
	return run, err
}

// fetchHeld runs region under its lease, unless another host captured it in this slot (then
// nil, the run's Reason saying by whom, logged).
func (r *Runner) fetchHeld(ctx context.Context, fr *fetch.Runner, region string) (store.Run, error) {
	log := r.e.log.With().Str("region", region).Str("credential", r.e.cfg.Credential).Logger()
	ctx, h, err := r.takeLease(ctx, log, region)
	if err != nil {
		ctx, h, err = r.waitForHolder(ctx, log, region, err)
	}
	if err != nil {
		return store.Run{Credential: r.e.cfg.Credential, Region: region}, err
	}
	defer h.release()
	if err := r.capturedElsewhere(ctx, region); err != nil {
		return r.captured(region, err)
	}
	return fr.Run(ctx, region, h.lease)
}

// captured logs the once-per-tick check's finding: the region is not run, and that is no error.
func (r *Runner) captured(region string, err error) (store.Run, error) {
	run := store.Run{Credential: r.e.cfg.Credential, Region: region}
	var c *capturedError
	if !errors.As(err, &c) {
		return run, err
	}
	r.e.log.Info().Str("region", region).Str("host", c.by.Host).Int64("run", c.by.ID).
		Time("captured_at", c.by.FinishedAt.UTC()).
		Time("slot_start", c.from.UTC()).Time("slot_end", c.to.UTC()).Msg(c.Error())
	run.Reason = c.Error()
	return run, nil
}

// textfileRun is a run's metrics textfile (node_exporter's textfile collector): nil when none.
type textfileRun struct {
	m    *metrics.Metrics
	path string
}

// textfile returns the metrics of region's run written to dir's textfile (nil for dir ""),
// carrying over the counters the file holds.
func (r *Runner) textfile(region, dir string) *textfileRun {
	if dir == "" {
		return nil
	}
	tf := &textfileRun{path: metrics.TextfileName(dir, region), m: r.e.metrics(r.limiter, []string{region}, r.store)}
	if err := tf.m.CarryCounters(tf.path); err != nil {
		r.e.log.Warn().Err(err).Msg("metrics textfile: earlier counters not carried over")
	}
	return tf
}

// runner returns fr observed by the textfile's metrics (fr itself when tf is nil).
func (tf *textfileRun) runner(fr *fetch.Runner) *fetch.Runner {
	if tf == nil {
		return fr
	}
	f := *fr
	f.OnCall, f.OnRun = tf.m.ObserveCall, tf.m.ObserveRun
	return &f
}

// write writes the textfile; a failure is logged (the run's outcome is unchanged).
func (tf *textfileRun) write(log zerolog.Logger, region string) {
	if tf == nil {
		return
	}
	if err := tf.m.WriteTextfile(tf.path, region); err != nil {
		log.Warn().Err(err).Str("file", tf.path).Msg("cannot write the metrics textfile")
	}
}

// Servers are what `schedule` serves beside its runs (nil: nothing): Metrics /metrics and
// /healthz; API the read API and dashboard (Serve, with Token) with the scheduler's metrics.
type Servers struct {
	Metrics, API net.Listener
	Token        string
}

// Schedule runs every configured region on its schedule until ctx is cancelled, serving srv
// and telling systemd it is ready: nil after a clean stop, a *fetch.CredentialError when the
// API rejects the key.
func (r *Runner) Schedule(ctx context.Context, srv Servers) error {
	cfg, log := r.e.cfg, r.e.log
	var m *metrics.Metrics
	if srv.Metrics != nil || srv.API != nil {
		m = r.e.metrics(r.limiter, cfg.Regions, r.store)
		r.fetch.OnCall, r.fetch.OnRun = m.ObserveCall, m.ObserveRun
	}
	if srv.API != nil {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := r.e.Serve(sctx, srv.API, srv.Token, m); err != nil {
				log.Error().Err(err).Msg("read API stopped")
			}
		}()
		defer func() { stop(); <-done }()
	}
	if srv.Metrics != nil {
		hs := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := hs.Serve(srv.Metrics); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error().Err(err).Msg("metrics server stopped")
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			hs.Shutdown(sctx)
		}()
		log.Info().Str("addr", srv.Metrics.Addr().String()).Msg("serving /metrics and /healthz")
	}
	jobs := make([]schedule.Job, len(r.plan))
	for i, p := range r.plan {
		region := p.Region
		jobs[i] = schedule.Job{Name: region, Schedule: p.Schedule, Run: func(ctx context.Context) error {
			_, err := r.RunOne(ctx, region)
			return err
		}}
	}
	s, err := schedule.New(jobs, schedule.Options{
		Concurrency: cfg.Schedule.Concurrency,
		Grace:       cfg.Schedule.Grace.Std(),
		Log:         r.e.log,
		Fatal:       func(err error) bool { return errors.As(err, new(*fetch.CredentialError)) },
	})
	if err != nil {
		return err
	}
	r.e.log.Info().Strs("regions", cfg.Regions).Int("concurrency", cfg.Schedule.Concurrency).
		Int64("grace_ms", cfg.Schedule.Grace.Std().Milliseconds()).Msg("scheduler starting")
	defer sdnotify.Ready(ctx, r.e.log)() // Type=notify: ready, watchdog, stopping
	return s.Run(ctx)
}

// metrics returns the metrics of regions: build info, counters at 0, each region's last success
// read from st (nil: not read), and quota gauges unless quotaReader is nil.
func (e *Engine) metrics(quotaReader metrics.StatusReader, regions []string, st *store.Store) *metrics.Metrics {
	creds := e.credentialNames()
	m := metrics.New(quotaReader, creds, regions, 0)
	m.SetBuildInfo(e.o.Version, runtime.Version())
	var buckets []string
	for _, b := range e.cfg.Quota.Buckets {
		buckets = append(buckets, b.Name)
	}
	m.ZeroSeries(creds, buckets, slices.Sorted(maps.Keys(e.cfg.Quota.Costs)))
	cred := e.cfg.Credential
	if st != nil { // nil: serve before its database opens
		m.ReadLastSuccess(func(ctx context.Context) (map[string]time.Time, error) { return st.LastSuccess(ctx, cred) })
		m.ReadMissedSlots(func(ctx context.Context) (map[string]int, error) { return e.MissedSlots(ctx, st) })
	}
	return m
}

// credentialNames returns the configured credentials' names.
func (e *Engine) credentialNames() []string {
	out := make([]string, len(e.cfg.Credentials))
	for i, c := range e.cfg.Credentials {
		out[i] = c.Name
	}
	return out
}

// joinFailures joins the failures of several regions: a *Failures (exit 1) unless they are all
// held leases (exit 3), as a failed region needs attention more than a skipped one.
func joinFailures(errs []error) error {
	for _, err := range errs {
		if !errors.As(err, new(*quota.LeaseHeldError)) {
			if len(errs) == 1 {
				return err
			}
			return &Failures{Errs: errs}
		}
	}
	return errors.Join(errs...)
}

// Failures are the failures of several regions of one RunRegions; not unwrapped (exit 1).
type Failures struct{ Errs []error }

// Error is one line per region.
func (e *Failures) Error() string {
	lines := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		lines[i] = strings.Join(strings.Fields(err.Error()), " ")
	}
	return strings.Join(lines, "\n")
}
