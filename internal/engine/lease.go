package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/schedule"
	"github.com/trendfetch/trendfetch/internal/store"
)

// hold is a region taken for a run: the fetch lease it gives the run and what frees it.
type hold struct {
	lease   fetch.Lease
	release func()
}

// takeLease takes the run lease of region (docs/design.md §5, leases). It returns a context
// cancelled with fetch.ErrLeaseLost when the lease is lost. A held lease is a
// *quota.LeaseHeldError; a down backend gives a hold without a lease (fetch.Lease.Down) but
// with the store's claim (claimInStore): the run goes on, its calls applying their policies at once.
func (r *Runner) takeLease(ctx context.Context, log zerolog.Logger, region string) (context.Context, hold, error) {
	l, err := r.limiter.AcquireLease(ctx, r.e.cfg.Credential, region, r.e.cfg.Runs.LeaseTTL.Std(), "")
	if backendDown(err) {
		return r.claimInStore(ctx, log, region, err)
	}
	if err != nil {
		return ctx, hold{}, err
	}
	if l.TookOver() != "" {
		log.Warn().Str("holder", l.TookOver()).Msg("took over the run lease of a process of this host that no longer exists")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-l.Lost():
			err := fmt.Errorf("%w: %v", fetch.ErrLeaseLost, l.Err())
			log.Error().Err(err).Msg("stopping the run: another process may now run this region")
			cancel(err)
		case <-ctx.Done():
		}
	}()
	return ctx, hold{release: func() {
		cancel(nil)
		if err := l.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn().Err(err).Msg("cannot release the run lease; it expires by itself")
		}
	}}, nil
}

// claimInStore holds region for a run while the quota backend is down (down): its claim in the
// store (store.ClaimRegion, docs/design.md §10a), so that hosts sharing a PostgreSQL dataset still
// run a region one at a time; a claim held by another run is a *quota.LeaseHeldError.
func (r *Runner) claimInStore(ctx context.Context, log zerolog.Logger, region string, down error) (context.Context, hold, error) {
	release, err := r.store.ClaimRegion(ctx, r.e.cfg.Credential, region)
	if errors.Is(err, store.ErrClaimed) {
		return ctx, hold{}, &quota.LeaseHeldError{Credential: r.e.cfg.Credential, Region: region,
			Holder: "another run (its claim in PostgreSQL: the quota backend is down)"}
	}
	if err != nil {
		return ctx, hold{}, err
	}
	log.Warn().Err(down).Msg("quota backend unavailable; running without the region lease and applying call site policies for the rest of this run")
	return ctx, hold{lease: fetch.Lease{Down: down}, release: release}, nil
}

// backendDown reports a quota backend failure (not an answer such as a held lease).
func backendDown(err error) bool {
	return errors.Is(err, quota.ErrUnavailable) || errors.Is(err, quota.ErrOutOfMemory)
}

// capturedError is a run not started because another host captured its
// region in the current slot of its schedule (docs/design.md §10a).
type capturedError struct {
	by       store.Run // the other host's run
	from, to time.Time // the slot
	loc      *time.Location
}

func (e *capturedError) Error() string {
	const layout = "2006-01-02 15:04:05 MST"
	return fmt.Sprintf("%s was captured by host %s, run %d, at %s in this slot of its schedule (%s to %s): nothing fetched; `trendfetch run --force` fetches it anyway",
		e.by.Region, e.by.Host, e.by.ID, e.by.FinishedAt.In(e.loc).Format(layout),
		e.from.In(e.loc).Format(layout), e.to.In(e.loc).Format(layout))
}

// slotOf returns the current slot of region's schedule, zero outside the schedule.
func (r *Runner) slotOf(region string, now time.Time) (from, to time.Time) {
	i := slices.IndexFunc(r.plan, func(p schedule.Region) bool { return p.Region == region })
	if i < 0 {
		return time.Time{}, time.Time{}
	}
	return schedule.Slot(r.plan[i].Schedule, now)
}

// capturedElsewhere is the once-per-tick check (docs/design.md §10a), asked once the run holds
// its region: a *capturedError when another host's successful run of region started in its
// current slot. Force and a region outside the schedule skip it; an unreadable store is logged
// and the run goes on.
func (r *Runner) capturedElsewhere(ctx context.Context, region string) error {
	from, to := r.slotOf(region, time.Now())
	if r.Force || from.IsZero() {
		return nil
	}
	host, _ := os.Hostname()
	q := store.RunsQuery{Region: region, Limit: 50}
	for {
		runs, err := r.store.RunsPage(ctx, q) // newest first
		if err != nil {
			r.e.log.Warn().Err(err).Str("region", region).Msg("cannot read the runs of this slot: running without the once-per-tick check")
			return nil
		}
		for _, run := range runs {
			if run.StartedAt.Before(from) {
				return nil
			}
			if run.Host != host && (run.Outcome == store.OutcomeSuccess || run.Outcome == store.OutcomeSuccessUnmetered) {
				return &capturedError{by: run, from: from, to: to, loc: r.e.cfg.Schedule.Location()}
			}
		}
		if len(runs) < q.Limit {
			return nil
		}
		q.Before = runs[len(runs)-1].ID
	}
}
