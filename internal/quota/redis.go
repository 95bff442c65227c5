package quota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// Every key of the Redis backend is built below (layout: lua/lib.lua).
const (
	// RedisKeyPrefix starts every Redis key trendfetch writes (quota and
	// serve's rate limiter alike): one ACL pattern, RedisKeyPrefix:*, grants them.
	RedisKeyPrefix = "trendfetch"
	stateKeySuffix = "state"
	leaseKeyInfix  = "lease"
)

// reservedBucketName reports whether name would collide with the keys or
// state hash fields: "state", "exhausted", "lease" and "lease:...".
func reservedBucketName(name string) bool {
	return name == stateKeySuffix || name == "exhausted" || name == leaseKeyInfix || strings.HasPrefix(name, leaseKeyInfix+":")
}

// redisBackend is the Backend shared by hosts on Redis (standalone,
// Sentinel or Cluster): one Lua script per decision (redis_lua.go).
type redisBackend struct {
	client redis.UniversalClient
	// midnights returns the Pacific midnights passed to the scripts
	// (redisMidnightTable; tests move "midnight" next to Redis TIME).
	midnights    func(now time.Time) []int64
	waitReplicas int           // NewRedis's
	waitTimeout  time.Duration // NewRedis's
	user         string        // the ACL user of client, for *AccessError

	callsMu sync.RWMutex
	calls   map[redisCallKey]*redisReserveCall // reserveCall's cache
}

// DefaultRedisWaitTimeout is the default of NewRedis's waitTimeout.
const DefaultRedisWaitTimeout = 100 * time.Millisecond

// errNotReplicated: WAIT did not confirm an admission on enough replicas.
var errNotReplicated = errors.New("admission not confirmed by enough replicas")

// NewRedis returns a Redis backend owning client (built by redisconn.New; not a Ring: a
// credential's keys must live on one node). With waitReplicas n > 0 an admission counts only once n
// replicas have it: Reserve runs WAIT n waitTimeout (<= 0: DefaultRedisWaitTimeout) after it and,
// when fewer confirm, returns an error wrapping ErrUnavailable; the entry stays counted
// (docs/quota.md, "Replication").
func NewRedis(client redis.UniversalClient, waitReplicas int, waitTimeout time.Duration) Backend {
	return &redisBackend{client: client, midnights: redisMidnightTable, user: redisUser(client),
		calls: map[redisCallKey]*redisReserveCall{}, waitReplicas: max(waitReplicas, 0), waitTimeout: cmp.Or(max(waitTimeout, 0), DefaultRedisWaitTimeout)}
}

// Name returns "redis".
func (r *redisBackend) Name() string { return "redis" }

// Close closes the Redis client.
func (r *redisBackend) Close() error { return r.client.Close() }

// bucketKey is a bucket's log; the braces make the credential the Redis
// Cluster hash tag, so a multi-bucket script touches one slot.
func (r *redisBackend) bucketKey(credential, bucket string) string {
	return RedisKeyPrefix + ":{" + credential + "}:" + bucket
}

// stateKey is the credential's state hash (marks and the buckets' caches).
func (r *redisBackend) stateKey(credential string) string {
	return r.bucketKey(credential, stateKeySuffix)
}

// leaseKey is the run lease of region.
func (r *redisBackend) leaseKey(credential, region string) string {
	return r.bucketKey(credential, leaseKeyInfix+":"+region)
}

// redisGlobEscaper escapes the glob characters of a string for SCAN MATCH.
var redisGlobEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// redisCheckCredential refuses an empty name and braces (two credentials could share a hash tag).
func redisCheckCredential(credential string) error {
	if credential == "" {
		return errors.New("quota: empty credential name")
	}
	if strings.ContainsAny(credential, "{}") {
		return fmt.Errorf("quota: credential name %q must not contain '{' or '}'", credential)
	}
	return nil
}

// fail classifies a Redis failure of op for credential (docs/design.md §4,
// "Backend failure"): *AccessError, ErrOutOfMemory, ErrUnavailable (no
// connection or answer in time, or redisDidNotRun), else a plain error.
func (r *redisBackend) fail(op, credential string, err error) error {
	var reply redis.Error
	isReply := errors.As(err, &reply)
	msg := err.Error()
	switch {
	case isReply && (redis.HasErrorPrefix(err, "NOPERM") || redis.HasErrorPrefix(err, "NOAUTH") || redis.HasErrorPrefix(err, "WRONGPASS")):
		e := &AccessError{User: r.user, Reply: msg}
		if quoted := strings.Split(msg, "'"); len(quoted) >= 3 { // NOPERM: "... to run the 'evalsha' command"
			e.Command = quoted[1]
		}
		return e
	case isReply && strings.Contains(msg, "OOM command not allowed"):
		return fmt.Errorf("%w: redis %s for credential %q: %w", ErrOutOfMemory, op, credential, err)
	case isReply && !redisDidNotRun(err) && !redis.HasErrorPrefix(err, "BUSY"):
		return fmt.Errorf("quota: redis %s for credential %q: %w", op, credential, err)
	}
	return fmt.Errorf("%w: redis %s for credential %q: %w", ErrUnavailable, op, credential, err)
}

// ErrOutOfMemory is wrapped by the error of a backend out of memory (Redis
// "OOM command not allowed"): call sites fail closed whatever their policy.
var ErrOutOfMemory = errors.New("quota backend out of memory")

// AccessError reports that Redis refused trendfetch's User ("default" when
// the URL names none) with Reply (NOPERM, NOAUTH, WRONGPASS), naming the
// refused Command (lower case) when it did: a configuration error (exit 2).
type AccessError struct {
	User, Command, Reply string
}

// ExitCode is exitcode.Usage: a Redis user without the permissions trendfetch needs.
func (e *AccessError) ExitCode() int { return exitcode.Usage }

// Error implements error: one line naming the user and what to grant.
func (e *AccessError) Error() string {
	switch {
	case strings.HasPrefix(e.Reply, "NOPERM") && e.Command != "":
		return fmt.Sprintf("quota.redis: Redis user %q may not run %s (%s): grant it with ACL SETUSER %s +%s", e.User, strings.ToUpper(e.Command), e.Reply, e.User, e.Command)
	case strings.HasPrefix(e.Reply, "NOPERM"):
		return fmt.Sprintf("quota.redis: Redis user %q may not use trendfetch's keys (%s): grant it with ACL SETUSER %s ~%s:*", e.User, e.Reply, e.User, RedisKeyPrefix)
	}
	return fmt.Sprintf("quota.redis: Redis refused user %q (%s): check the users and passwords of quota.redis (url, sentinel)", e.User, e.Reply)
}

// redisUser is the ACL user client authenticates as ("default" when none).
func redisUser(client redis.UniversalClient) string {
	var u string
	switch c := client.(type) {
	case *redis.Client:
		u = c.Options().Username
	case *redis.ClusterClient:
		u = c.Options().Username
	}
	return cmp.Or(u, "default")
}

// master returns the client of the master holding credential's keys (for
// WAIT on one connection, and SCAN on the node owning the credential's slot).
func (r *redisBackend) master(ctx context.Context, credential string) (*redis.Client, error) {
	switch c := r.client.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, r.stateKey(credential))
	}
	return nil, fmt.Errorf("quota: redis needs a Client or ClusterClient, not %T", r.client)
}

// scan calls fn with each batch of keys of credential matching pattern
// (SCAN on the node owning the credential's slot) and that node.
func (r *redisBackend) scan(ctx context.Context, op, credential, pattern string, fn func(node redis.Cmdable, keys []string) error) error {
	if err := redisCheckCredential(credential); err != nil {
		return err
	}
	node, err := r.master(ctx, credential)
	if err != nil {
		return r.fail(op, credential, err)
	}
	for cursor := uint64(0); ; {
		keys, next, err := node.Scan(ctx, cursor, pattern, 1000).Result()
		if err == nil {
			err = fn(node, keys)
		}
		if err != nil {
			return r.fail(op, credential, err)
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Reset deletes the logs and the state hash of credential, not its leases.
func (r *redisBackend) Reset(ctx context.Context, credential string) error {
	return r.scan(ctx, "reset", credential, redisGlobEscaper.Replace(r.bucketKey(credential, ""))+"*", func(node redis.Cmdable, keys []string) error {
		keys = slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, r.leaseKey(credential, "")) })
		if len(keys) == 0 {
			return nil
		}
		return node.Del(ctx, keys...).Err()
	})
}
