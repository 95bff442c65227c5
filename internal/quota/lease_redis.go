package quota

import (
	"context"
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
// It is taken with SET NX PX; renewal and unlock compare the value with the
// token first (GET == token, then PEXPIRE / DEL) in one script each, so a
// holder never extends or frees a lease that expired and was taken by
// another. Expiry is Redis's own (server clock); a crashed holder's key
// disappears ttl after its last renewal.

// redisLeaseLockScript takes the lease if free (SET NX PX) or extends it if
// already held with the token; otherwise it reports the holder.
//
//	KEYS[1] trendfetch:{<credential>}:lease:<region>
//	ARGV[1] token   ARGV[2] ttl, ms (>= 1)
//
// Reply: {1} when taken or extended; {0, current value, PTTL ms} when held
// by another token (PTTL -1: no expiry set, shown as unknown).
var redisLeaseLockScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1} end
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1}
end
return {0, cur, redis.call('PTTL', KEYS[1])}
`)

// redisLeaseRenewScript extends the lease only while it holds the token.
//
//	KEYS[1] trendfetch:{<credential>}:lease:<region>
//	ARGV[1] token   ARGV[2] ttl, ms (>= 1)
//
// Reply: 1 when extended, 0 when the key is gone or holds another token.
var redisLeaseRenewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// redisLeaseUnlockScript deletes the lease only while it holds the token.
//
//	KEYS[1] trendfetch:{<credential>}:lease:<region>
//	ARGV[1] token
//
// Reply: 1 when deleted, 0 when the key is gone or holds another token.
var redisLeaseUnlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// TryLock implements Locker with redisLeaseLockScript. name must be
// LeaseName(credential, region) with a valid credential name. Redis
// failures wrap ErrUnavailable.
func (r *RedisBackend) TryLock(ctx context.Context, name, token string, ttl time.Duration) (bool, string, time.Duration, error) {
	if err := checkLockArgs(name, token, ttl, true); err != nil {
		return false, "", 0, err
	}
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return false, "", 0, err
	}
	ms := leaseTTLMillis(ttl)
	res, err := redisLeaseLockScript.Run(ctx, r.client, []string{key}, token, ms).Slice()
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

// Renew implements Locker with redisLeaseRenewScript. Redis failures wrap
// ErrUnavailable.
func (r *RedisBackend) Renew(ctx context.Context, name, token string, ttl time.Duration) (bool, error) {
	if err := checkLockArgs(name, token, ttl, true); err != nil {
		return false, err
	}
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return false, err
	}
	n, err := redisLeaseRenewScript.Run(ctx, r.client, []string{key}, token, leaseTTLMillis(ttl)).Int64()
	if err != nil {
		return false, r.fail("lease renew", credential, err)
	}
	return n == 1, nil
}

// Unlock implements Locker with redisLeaseUnlockScript. Redis failures wrap
// ErrUnavailable.
func (r *RedisBackend) Unlock(ctx context.Context, name, token string) error {
	if err := checkLockArgs(name, token, 0, false); err != nil {
		return err
	}
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return err
	}
	if err := redisLeaseUnlockScript.Run(ctx, r.client, []string{key}, token).Err(); err != nil {
		return r.fail("lease unlock", credential, err)
	}
	return nil
}
