package fetch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/proc"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// errLeaseLost is the cause of a run's cancellation when its lease was lost
// (renewals failed until it expired, or it expired and another process
// took the region); the lease's own error says which.
var errLeaseLost = errors.New("run lease lost")

// leaseHolder describes a run for its lease: "<host> pid <pid> since
// <RFC 3339 UTC time the lease was asked for>". staleHolder parses it back.
func leaseHolder(host string, pid int, since time.Time) string {
	return fmt.Sprintf("%s pid %d since %s", host, pid, since.UTC().Format(time.RFC3339))
}

var leaseHolderRE = regexp.MustCompile(`^(\S+) pid (\d+) since (\S+)$`)

// staleHolder reports whether holder (as built by leaseHolder) names a
// process of this host that is gone: no such pid, or a process with that
// pid started after the lease was taken (proc.Gone). Holders on other
// hosts, and holders this cannot parse, are never stale: they expire with
// their TTL or are released with `trendfetch lease release`.
func staleHolder(holder string) bool {
	m := leaseHolderRE.FindStringSubmatch(holder)
	if m == nil {
		return false
	}
	if host, err := os.Hostname(); err != nil || host != m[1] {
		return false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil || pid == os.Getpid() {
		return false
	}
	since, err := time.Parse(time.RFC3339, m[3])
	if err != nil {
		return false
	}
	return proc.Gone(pid, since)
}

// lease takes the run lease of (credential, region) so two runs of one
// region never overlap, on any host sharing the quota backend. It returns a
// context cancelled if the lease is lost, and a release function. A held
// lease returns *quota.LeaseHeldError, unless its holder is stale
// (staleHolder): that lease is broken, logged, and taken over at once. When the backend is unreachable the
// run goes ahead without a lease (fail-open, logged): lease returns a no-op
// release and the error (wrapping quota.ErrUnavailable), which the run keeps
// as its "limiter down" state, so its calls apply their policies at once
// instead of waiting on the backend again; a down backend must not stop cron.
func (r *Runner) lease(ctx context.Context, log zerolog.Logger, region, holder string, ttl time.Duration) (context.Context, func(), error) {
	l, err := r.Limiter.AcquireLease(ctx, r.Credential, region, ttl, holder)
	var held *quota.LeaseHeldError
	if errors.As(err, &held) && staleHolder(held.Holder) {
		// restic's rule: the holder is a process of this host that is gone.
		broke, berr := r.Limiter.BreakLease(ctx, r.Credential, region, held.Holder)
		if berr == nil && broke {
			log.Warn().Str("holder", held.Holder).Msg("took over the run lease of a process of this host that no longer exists")
		}
		l, err = r.Limiter.AcquireLease(ctx, r.Credential, region, ttl, holder)
	}
	switch {
	case err == nil:
	case errors.Is(err, quota.ErrUnavailable):
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
