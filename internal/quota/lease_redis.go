package quota

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Run leases on Redis: one key per lease (leaseKey) holding the token, with
// PX = ttl, changed only by lua/lease.lua.

//go:embed lua/lease.lua
var luaLease string

var redisLeaseScript = redis.NewScript(luaLease)

// lease runs lua/lease.lua's op on lease id with args.
func (r *redisBackend) lease(ctx context.Context, op string, id leaseID, args ...any) (any, error) {
	if err := redisCheckCredential(id.credential); err != nil {
		return nil, err
	}
	res, err := redisLeaseScript.Run(ctx, r.client, []string{r.leaseKey(id.credential, id.region)}, append([]any{op}, args...)...).Result()
	if err != nil {
		return nil, r.fail("lease "+op, id.credential, err)
	}
	return res, nil
}

// TryLock implements leaseLocker.
func (r *redisBackend) TryLock(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, string, time.Duration, error) {
	ms := ceilTo(ttl, time.Millisecond)
	reply, err := r.lease(ctx, "lock", id, token, ms)
	if err != nil {
		return false, "", 0, err
	}
	switch res, _ := reply.([]any); {
	case len(res) == 1 && res[0] == int64(1):
		return true, leaseHolderOf(token), time.Duration(ms) * time.Millisecond, nil
	case len(res) == 3 && res[0] == int64(0):
		cur, _ := res[1].(string)
		pttl, _ := res[2].(int64)
		return false, leaseHolderOf(cur), time.Duration(max(pttl, 0)) * time.Millisecond, nil
	default:
		return false, "", 0, fmt.Errorf("quota: redis lease lock: unexpected reply %v", reply)
	}
}

// Renew implements leaseLocker.
func (r *redisBackend) Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, error) {
	n, err := r.lease(ctx, "renew", id, token, ceilTo(ttl, time.Millisecond))
	return n == int64(1), err
}

// Unlock implements leaseLocker.
func (r *redisBackend) Unlock(ctx context.Context, id leaseID, token string) error {
	_, err := r.lease(ctx, "unlock", id, token)
	return err
}

// BreakLease implements leaseLocker.
func (r *redisBackend) BreakLease(ctx context.Context, id leaseID, holder string) (bool, error) {
	n, err := r.lease(ctx, "break", id, holder)
	return n == int64(1), err
}

// Leases implements leaseLocker: SCAN, then GET and PTTL per lease.
func (r *redisBackend) Leases(ctx context.Context, credential string) ([]LeaseInfo, error) {
	prefix := r.leaseKey(credential, "")
	var out []LeaseInfo
	err := r.scan(ctx, "lease list", credential, redisGlobEscape(prefix)+"*", func(node redis.Cmdable, keys []string) error {
		for _, k := range keys {
			val, err := node.Get(ctx, k).Result()
			if errors.Is(err, redis.Nil) {
				continue // expired meanwhile
			}
			if err != nil {
				return err
			}
			pttl, err := node.PTTL(ctx, k).Result()
			if err != nil {
				return err
			}
			out = append(out, LeaseInfo{Credential: credential, Region: strings.TrimPrefix(k, prefix),
				Holder: describeHolder(leaseHolderOf(val)), stored: leaseHolderOf(val), Remaining: max(pttl, 0)})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Region < out[j].Region })
	return out, err
}
