package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// holderPoll is how often a run waiting for its region's lease asks for it again; holderGrace is
// how long it waits for the holder's run to be recorded (a run takes its lease before it records itself).
var holderPoll, holderGrace = time.Second, 5 * time.Second

// waitForHolder is what a run does when takeLease found region's lease held (held; docs/design.md
// §10a): when another host's recorded run of the current slot holds it, the run asks for the lease
// every holderPoll until ctx is done (runs.timeout), then checks whether the holder captured the slot
// (capturedElsewhere) or runs the region itself. It returns held at once (exit 3) when --force is
// set, the region is not scheduled, this host holds the lease, a run of an earlier slot still runs,
// or no other host's run of this slot was seen running within holderGrace (a run or a lease by hand).
func (r *Runner) waitForHolder(ctx context.Context, log zerolog.Logger, region string, held error) (context.Context, hold, error) {
	var lh *quota.LeaseHeldError
	host, _ := os.Hostname()
	if r.Force || !errors.As(held, &lh) || strings.HasPrefix(lh.Holder, host+" ") {
		return ctx, hold{}, held
	}
	t := time.NewTicker(holderPoll)
	defer t.Stop()
	for start, waiting := time.Now(), false; ; {
		switch r.holderRun(ctx, region, host) {
		case earlierSlot:
			return ctx, hold{}, held
		case noRun: // once a holder's run was seen, it is finishing: its lease comes free
			if !waiting && time.Since(start) >= holderGrace {
				return ctx, hold{}, held
			}
		case thisSlot:
			if !waiting {
				waiting = true
				log.Info().Err(held).Msg("another host's run of this slot holds the region: waiting for it (at most runs.timeout)")
			}
		}
		select {
		case <-ctx.Done():
			return ctx, hold{}, held
		case <-t.C:
		}
		lctx, h, err := r.takeLease(ctx, log, region)
		if !errors.As(err, new(*quota.LeaseHeldError)) {
			return lctx, h, err
		}
		held = err
	}
}

// holderState is what the store says of the runs of a region whose lease is held.
type holderState int

const (
	noRun       holderState = iota // no other host's run of the current slot is running (or unreadable)
	thisSlot                       // another host's run of the current slot is running
	earlierSlot                    // a run of an earlier slot is running, or the region has no schedule
)

// holderRun reads the newest 50 runs of region: whether one of an earlier slot or another host's
// run of the current slot is running.
func (r *Runner) holderRun(ctx context.Context, region, host string) holderState {
	from, _ := r.slotOf(region, time.Now())
	if from.IsZero() {
		return earlierSlot
	}
	runs, err := r.store.RunsPage(ctx, store.RunsQuery{Region: region, Limit: 50}) // newest first
	if err != nil {
		return noRun
	}
	state := noRun
	for _, run := range runs {
		switch {
		case run.Outcome != store.OutcomeRunning:
		case run.StartedAt.Before(from):
			return earlierSlot
		case run.Host != host:
			state = thisSlot
		}
	}
	return state
}
