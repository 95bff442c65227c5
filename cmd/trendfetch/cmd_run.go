package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/metrics"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newRunCmd(a *app) *cobra.Command {
	var (
		regionFlags []string
		all         bool
		textfileDir string
	)
	cmd := &cobra.Command{
		Use:   "run (--region CODE ... | --all)",
		Short: "Ingest the trending chart of one or more regions",
		Long: `Ingest chart=mostPopular for each region, one run per region, in order.
Every page is reserved from the quota limiter before it is sent. A quota
denial stops cleanly (no sleeping): the run is recorded with its Retry-After
and trendfetch exits 75; the next cron tick resumes.

` + exitCodesHelp,
		Example: "  trendfetch run --region US\n  trendfetch run --region US --region GB\n  trendfetch run --all",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if code, err := regions.Parse(args[0]); err == nil {
				return usagef("trendfetch run --region "+code, "run takes regions as --region %s, not as an argument", code)
			}
			return usagef("trendfetch run --region US", "run takes no arguments (got %q): regions are given as --region CODE", termtext.Clip(args[0], 80))
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(regionFlags) == 0 && !all {
				return usagef("trendfetch run --region US", "run needs --region CODE or --all")
			}
			if len(regionFlags) > 0 && all {
				return usagef("trendfetch run --help", "--region and --all exclude each other")
			}
			if err := a.loadConfig(); err != nil {
				return err
			}
			list := a.cfg.Regions
			if !all {
				var err error
				if list, err = regions.ParseList(regionFlags); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("metrics-textfile") {
				a.cfg.Runs.MetricsTextfile = textfileDir
			}
			return a.runRegions(cmd.Context(), list)
		},
	}
	cmd.Flags().StringVar(&textfileDir, "metrics-textfile", "", "write each region's metrics to DIR/trendfetch_REGION.prom for node_exporter's textfile collector (default: runs.metrics_textfile)")
	cmd.Flags().StringSliceVarP(&regionFlags, "region", "r", nil, "region code (regionCode), repeatable or comma-separated, e.g. US,GB")
	cmd.Flags().BoolVar(&all, "all", false, "every region in the config's regions list")
	return cmd
}

// engine is what running a region needs, opened once per process: the
// store, the limiter and the API client, wired into one fetch.Runner whose
// Run is the code path of a region for both `run` (one invocation) and
// `schedule` (its lifetime). Close releases it.
type engine struct {
	store   *store.Store
	limiter *quota.Limiter
	runner  *fetch.Runner
}

// openEngine opens the store (migrating it), the limiter and the API client
// for the configured credential. Errors: a missing API key (exit 2), the
// database or the quota backend cannot be opened (exit 1).
func (a *app) openEngine(ctx context.Context) (*engine, error) {
	cred, err := a.cfg.FindCredential(a.cfg.Credential)
	if err != nil {
		return nil, err
	}
	key, err := cred.APIKey(a.lookupEnv)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, a.cfg.Database)
	if err != nil {
		return nil, err
	}
	lim, err := openLimiter(a.cfg, a.log)
	if err != nil {
		st.Close()
		return nil, err
	}
	svc, err := fetch.NewService(ctx, key, a.cfg.API.Endpoint)
	if err != nil {
		st.Close()
		lim.Close()
		return nil, err
	}
	set := fetch.Settings{
		PageSize:          a.cfg.API.PageSize,
		Timeout:           a.cfg.API.Timeout.Std(),
		Retries:           a.cfg.API.Retries,
		RetryBackoff:      a.cfg.API.RetryBackoff.Std(),
		LeaseTTL:          a.cfg.Runs.LeaseTTL.Std(),
		ChartCategories:   a.cfg.Chart.Categories,
		ChannelsRefresh:   enabled(a.cfg.Channels),
		CategoriesRefresh: enabled(a.cfg.Categories),
		StatsTrackFor:     a.cfg.Stats.TrackFor.Std(),
		StatsEvery:        a.cfg.Stats.Every.Std(),
	}
	// store.policy amended: each run refreshes (or removes) text older
	// than 30 days at its end; applyRetention leaves text to it.
	if policy, _, err := a.policyInForce(ctx, st); err == nil && policy == config.PolicyAmended {
		set.TextCutoff = func(now time.Time) time.Time {
			_, text := config.PolicyCutoffs(config.PolicyAmended, now)
			return text
		}
		set.TextRefreshPerDay = a.cfg.Store.RefreshPerDay
	}
	return &engine{store: st, limiter: lim, runner: &fetch.Runner{
		Service:    svc,
		Limiter:    lim,
		Store:      st,
		Credential: cred.Name,
		Policy:     a.cfg.Policy,
		Settings:   set,
		Searches:   searchesOf(a.cfg),
		Log:        a.log,
		Scrub:      a.secrets.String,
	}}, nil
}

// searchesOf returns the fetch view of the searches configured per region.
func searchesOf(cfg *config.Config) func(region string) []fetch.Search {
	return func(region string) []fetch.Search {
		var out []fetch.Search
		for _, s := range cfg.SearchesFor(region) {
			out = append(out, fetch.Search{Q: s.Q, Order: s.Order, PublishedAfter: s.PublishedAfter.Std(), MaxPages: s.MaxPages})
		}
		return out
	}
}

// enabled returns the refresh interval of an enabled call site, else 0.
func enabled(r config.Refresh) time.Duration {
	if !r.Enabled {
		return 0
	}
	return r.Refresh.Std()
}

// Close closes the limiter and the store.
func (e *engine) Close() error {
	return errors.Join(e.limiter.Close(), e.store.Close())
}

// runRegions runs each region in turn. A clean stop (quota denial), a
// rejected key or a signal ends the whole invocation; other failures are
// recorded and the next region still runs, and the invocation exits 1.
func (a *app) runRegions(ctx context.Context, list []string) error {
	e, err := a.openEngine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	a.applyRetention(ctx, e.store)
	var failed []error
	// Stale channels are batched across the regions of one invocation; the
	// last region sends the remainder.
	r := *e.runner
	r.Backlog = &fetch.Backlog{}
	for i, region := range list {
		r.Backlog.Hold = i < len(list)-1
		_, err := a.runOne(ctx, e, r, region)
		var (
			stop *fetch.StopError
			ce   *fetch.CredentialError
		)
		switch {
		case err == nil:
			continue
		case errors.As(err, &stop), errors.As(err, &ce), ctx.Err() != nil:
			if rest := list[i+1:]; len(rest) > 0 {
				a.log.Warn().Strs("skipped", rest).Msg("remaining regions not run")
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

// runOne runs region with r under the run deadline (runs.timeout) and,
// with runs.metrics_textfile set, writes the region's metrics textfile
// after the run (a failure to write is logged; it never fails the run).
func (a *app) runOne(ctx context.Context, e *engine, r fetch.Runner, region string) (store.Run, error) {
	ctx, cancel := a.runDeadline(ctx, region)
	defer cancel()
	dir := a.cfg.Runs.MetricsTextfile
	if dir == "" {
		return r.Run(ctx, region)
	}
	path := metrics.TextfileName(dir, region)
	m := metrics.New(e.limiter, credentialNames(a.cfg), []string{region}, 0)
	a.instrumentMetrics(m, e.store)
	if err := m.CarryCounters(path); err != nil {
		a.log.Warn().Err(err).Msg("metrics textfile: earlier counters not carried over")
	}
	r.OnCall, r.OnRun = m.ObserveCall, m.ObserveRun
	run, err := r.Run(ctx, region)
	if werr := m.WriteTextfile(path, region); werr != nil {
		a.log.Warn().Err(werr).Str("file", path).Msg("cannot write the metrics textfile")
	}
	return run, err
}

// instrumentMetrics adds what every /metrics and textfile shows: build info
// (the version `trendfetch --version` prints), counter series at 0 from the
// start, and each region's last success read from the database.
func (a *app) instrumentMetrics(m *metrics.Metrics, st *store.Store) {
	m.SetBuildInfo(version, runtime.Version())
	var buckets []string
	for _, b := range a.cfg.Quota.Buckets {
		buckets = append(buckets, b.Name)
	}
	m.ZeroSeries(credentialNames(a.cfg), buckets, sortedCostKeys(a.cfg.Quota.Costs))
	cred := a.cfg.Credential
	m.ReadLastSuccess(func(ctx context.Context) (map[string]time.Time, error) { return st.LastSuccess(ctx, cred) })
}

// runDeadline is ctx with the run deadline of runs.timeout (none when 0).
func (a *app) runDeadline(ctx context.Context, region string) (context.Context, context.CancelFunc) {
	d := a.cfg.Runs.Timeout.Std()
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("run of %s exceeded runs.timeout %s", region, d))
}

// credentialNames returns the configured credentials' names.
func credentialNames(cfg *config.Config) []string {
	out := make([]string, len(cfg.Credentials))
	for i, c := range cfg.Credentials {
		out[i] = c.Name
	}
	return out
}

// joinFailures joins the failures of several regions. When they are not
// all held leases (exit 3), the result is a plain error, so the exit code
// is 1: a failed region needs attention more than a skipped one.
func joinFailures(errs []error) error {
	joined := errors.Join(errs...)
	for _, err := range errs {
		var held *quota.LeaseHeldError
		if !errors.As(err, &held) {
			if len(errs) == 1 {
				return err
			}
			return &regionFailures{errs: errs}
		}
	}
	return joined
}

// regionFailures are the failures of several regions: printed one region
// per line; it does not unwrap, so it exits 1 even when some are held leases.
type regionFailures struct{ errs []error }

// Error is one line per region.
func (e *regionFailures) Error() string {
	lines := make([]string, len(e.errs))
	for i, err := range e.errs {
		lines[i] = oneLine(err)
	}
	return strings.Join(lines, "\n")
}
