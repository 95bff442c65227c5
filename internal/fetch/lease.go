package fetch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// errLeaseLost is the cause of a run's cancellation when its lease was lost
// (the lease's own error says why).
var errLeaseLost = errors.New("run lease lost")

// lease takes the run lease of (credential, region) (docs/design.md §5,
// leases). It returns a context cancelled if the lease is lost and a release
// function; a held lease returns *quota.LeaseHeldError. A down backend
// returns a no-op release and its error (backendDown): the run goes on
// without a lease, its calls applying their policies at once.
func (r *Runner) lease(ctx context.Context, log zerolog.Logger, region string, ttl time.Duration) (context.Context, func(), error) {
	l, err := r.Limiter.AcquireLease(ctx, r.Credential, region, ttl, "")
	if backendDown(err) {
		log.Warn().Err(err).Msg("quota backend unavailable; running without the region lease and applying call site policies for the rest of this run")
		return ctx, func() {}, err
	}
	if err != nil {
		return ctx, nil, err
	}
	if l.TookOver() != "" {
		log.Warn().Str("holder", l.TookOver()).Msg("took over the run lease of a process of this host that no longer exists")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-l.Lost():
			err := fmt.Errorf("%w: %v", errLeaseLost, l.Err())
			log.Error().Err(err).Msg("stopping the run: another process may now run this region")
			cancel(err)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(nil)
		if err := l.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn().Err(err).Msg("cannot release the run lease; it expires by itself")
		}
	}, nil
}
