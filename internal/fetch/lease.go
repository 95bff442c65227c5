package fetch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/quota"
)

// errLeaseLost is the cause of a run's cancellation when its lease was lost
// (renewals failed until it expired, or it expired and another process
// took the region); the lease's own error says which.
var errLeaseLost = errors.New("run lease lost")

// lease takes the run lease of (credential, region) so two runs of one
// region never overlap, on any host sharing the quota backend. It returns a
// context cancelled if the lease is lost, and a release function. A held
// lease returns *quota.LeaseHeldError, unless its holder is stale (a
// process of this host that is gone: quota's lease_holder.go): that lease
// is taken over at once, and logged. When the backend is unreachable the
// run goes ahead without a lease (fail-open, logged): lease returns a no-op
// release and the error (wrapping quota.ErrUnavailable), which the run keeps
// as its "limiter down" state, so its calls apply their policies at once
// instead of waiting on the backend again; a down backend must not stop cron.
func (r *Runner) lease(ctx context.Context, log zerolog.Logger, region string, ttl time.Duration) (context.Context, func(), error) {
	l, err := r.Limiter.AcquireLease(ctx, r.Credential, region, ttl, "")
	if err == nil && l.TookOver() != "" {
		log.Warn().Str("holder", l.TookOver()).Msg("took over the run lease of a process of this host that no longer exists")
	}
	switch {
	case err == nil:
	case errors.Is(err, quota.ErrUnavailable), errors.Is(err, quota.ErrOutOfMemory):
		log.Warn().Err(err).Msg("quota backend unavailable; running without the region lease and applying call site policies for the rest of this run")
		return ctx, func() {}, err
	default:
		return ctx, nil, err
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
