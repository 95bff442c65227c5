package quota

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Run leases on Redis (see lease.go). A lease is one string key,
//
//	trendfetch:{<credential>}:lease:<region>  value = token ("<random id> <holder>"), PX = ttl
//
// in the credential's hash tag like every other key of the credential.
// Reset, which deletes the credential's usage, keeps its leases: a lease is
// not usage, and a running job keeps its region.
// lua/lease.lua takes it (SET PX when free), renews and frees it only while
// it holds the token (GET == token, then PEXPIRE / DEL), so a holder never
// extends or frees a lease that expired and was taken by another. Expiry is Redis's own (server clock); a crashed holder's key
// disappears ttl after its last renewal.

//go:embed lua/lease.lua
var luaLease string

var redisLeaseScript = redis.NewScript(luaLease)

// TryLock implements leaseLocker with lua/lease.lua. name must be
// leaseName(credential, region) with a valid credential name. Redis
// failures wrap ErrUnavailable.
func (r *redisBackend) TryLock(ctx context.Context, name, token string, ttl time.Duration) (bool, string, time.Duration, error) {
	if err := checkLockArgs(name, token, ttl, true); err != nil {
		return false, "", 0, err
	}
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return false, "", 0, err
	}
	ms := leaseTTLMillis(ttl)
	res, err := redisLeaseScript.Run(ctx, r.client, []string{key}, "lock", token, ms).Slice()
	if err != nil {
		return false, "", 0, r.fail("lease lock", credential, err)
	}
	if len(res) == 1 && res[0] == int64(1) {
		return true, leaseHolderOf(token), time.Duration(ms) * time.Millisecond, nil
	}
	if len(res) != 3 || res[0] != int64(0) {
		return false, "", 0, r.fail("lease lock", credential, fmt.Errorf("unexpected reply %v", res))
	}
	cur, _ := res[1].(string)
	pttl, _ := res[2].(int64)
	return false, leaseHolderOf(cur), time.Duration(max(pttl, 0)) * time.Millisecond, nil
}

// Renew implements leaseLocker with lua/lease.lua. Redis failures wrap
// ErrUnavailable.
func (r *redisBackend) Renew(ctx context.Context, name, token string, ttl time.Duration) (bool, error) {
	if err := checkLockArgs(name, token, ttl, true); err != nil {
		return false, err
	}
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return false, err
	}
	n, err := redisLeaseScript.Run(ctx, r.client, []string{key}, "renew", token, leaseTTLMillis(ttl)).Int64()
	if err != nil {
		return false, r.fail("lease renew", credential, err)
	}
	return n == 1, nil
}

// Unlock implements leaseLocker with lua/lease.lua. Redis failures wrap
// ErrUnavailable.
func (r *redisBackend) Unlock(ctx context.Context, name, token string) error {
	if err := checkLockArgs(name, token, 0, false); err != nil {
		return err
	}
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return err
	}
	if err := redisLeaseScript.Run(ctx, r.client, []string{key}, "unlock", token).Err(); err != nil {
		return r.fail("lease unlock", credential, err)
	}
	return nil
}
