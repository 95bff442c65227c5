package quota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every key of the Redis backend is built below: RedisKeyPrefix:{<credential>}
// then the bucket name, stateKeySuffix (the state hash: the exhaustion
// marker, field "exhausted", and what lua/ keeps per bucket) or
// leaseKeyInfix:<region> (run leases).
const (
	// RedisKeyPrefix starts every Redis key trendfetch writes (quota and
	// serve's rate limiter alike): one ACL pattern, RedisKeyPrefix:*, grants them.
	RedisKeyPrefix = "trendfetch"
	stateKeySuffix = "state"
	leaseKeyInfix  = "lease"
)

// reservedBucketName reports whether name would collide with the keys or
// fields above: "state", "exhausted", "lease" and "lease:...".
func reservedBucketName(name string) bool {
	return name == stateKeySuffix || name == "exhausted" || name == leaseKeyInfix || strings.HasPrefix(name, leaseKeyInfix+":")
}

// redisBackend is the Backend shared by hosts on Redis (standalone,
// Sentinel or Cluster): one Lua script per decision (redis_lua.go), Redis
// TIME as the only clock. It is safe for concurrent use.
type redisBackend struct {
	client redis.UniversalClient
	// midnights returns the Pacific midnights (Unix µs, ascending) passed to
	// the scripts; tests replace it to move "midnight" next to Redis TIME.
	midnights func(now time.Time) []int64
	// waitReplicas and waitTimeout: see WithRedisWaitReplicas.
	waitReplicas int
	waitTimeout  time.Duration
	// user is the ACL user of client, for *AccessError.
	user string
}

var _ Backend = (*redisBackend)(nil)

// redisOption configures NewRedis.
type redisOption func(*redisBackend)

// DefaultRedisWaitTimeout is WithRedisWaitReplicas's timeout when given one
// <= 0, and the default of quota.redis.wait_timeout.
const DefaultRedisWaitTimeout = 100 * time.Millisecond

// errNotReplicated is wrapped with ErrUnavailable by Reserve's error when
// WAIT did not confirm an admission on enough replicas in time.
var errNotReplicated = errors.New("admission not confirmed by enough replicas")

// WithRedisWaitReplicas makes an admission count only once n replicas have
// it (n = 0, the default: no check): after the reserve script admits,
// Reserve runs WAIT n timeout on the same connection, and when fewer
// confirm within timeout (<= 0: DefaultRedisWaitTimeout) it returns an
// error wrapping ErrUnavailable, so the call site's policy applies; the
// entry stays counted on the master. Denials never wait. This makes an
// admission lost in a failover unlikely, not impossible (docs/quota.md,
// "Replication").
func WithRedisWaitReplicas(n int, timeout time.Duration) redisOption {
	return func(r *redisBackend) {
		r.waitReplicas, r.waitTimeout = max(n, 0), cmp.Or(max(timeout, 0), DefaultRedisWaitTimeout)
	}
}

// NewRedis returns a Redis backend using client, which it owns from now on
// (Close closes it). Build the client with redisconn.New to get short
// timeouts; any redis.UniversalClient (Client, ClusterClient, FailoverClient)
// works, a Ring does not (the credential's keys must live on one node).
func NewRedis(client redis.UniversalClient, opts ...redisOption) *redisBackend {
	r := &redisBackend{client: client, midnights: redisMidnightTable, user: redisUser(client)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Name returns "redis".
func (r *redisBackend) Name() string { return "redis" }

// Close closes the Redis client.
func (r *redisBackend) Close() error { return r.client.Close() }

// credTag is the start of every key of a credential: the braces make the
// credential the Redis Cluster hash tag, so a multi-bucket script touches
// one slot (no CROSSSLOT).
func (r *redisBackend) credTag(credential string) string {
	return RedisKeyPrefix + ":{" + credential + "}"
}

// bucketKey is the sorted-set log of one bucket: trendfetch:{<credential>}:<bucket>.
func (r *redisBackend) bucketKey(credential, bucket string) string {
	return r.credTag(credential) + ":" + bucket
}

// stateKey is the credential's state hash: trendfetch:{<credential>}:state.
func (r *redisBackend) stateKey(credential string) string {
	return r.credTag(credential) + ":" + stateKeySuffix
}

// leaseKey is the run lease of (credential, region): trendfetch:{<credential>}:lease:<region>.
func (r *redisBackend) leaseKey(credential, region string) string {
	return r.credTag(credential) + ":" + leaseKeyInfix + ":" + region
}

// redisGlobEscape escapes the glob characters of s for SCAN MATCH.
func redisGlobEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func redisCheckCredential(credential string) error {
	if credential == "" {
		return errors.New("quota: empty credential name")
	}
	if strings.ContainsAny(credential, "{}") {
		// A '}' would end the hash tag early; keys would still share a slot
		// but two credentials could share a tag. Names never need braces.
		return fmt.Errorf("quota: credential name %q must not contain '{' or '}'", credential)
	}
	return nil
}

// fail classifies a Redis failure of op for credential (docs/design.md §4,
// "Backend errors are not all unreachable"):
//   - NOPERM, NOAUTH, WRONGPASS: an *AccessError, a configuration error;
//   - OOM (maxmemory reached under noeviction): wraps ErrOutOfMemory, so
//     every call site fails closed;
//   - a connection that cannot be made or answered in time, and the replies
//     of a server that is failing over or loading (redisDidNotRun): wraps
//     ErrUnavailable, where the call site's fail-open/closed policy applies;
//   - any other reply of the server: a plain error (the call stops).
func (r *redisBackend) fail(op, credential string, err error) error {
	var reply redis.Error
	isReply := errors.As(err, &reply)
	msg := err.Error()
	switch {
	case isReply && (redis.HasErrorPrefix(err, "NOPERM") || redis.HasErrorPrefix(err, "NOAUTH") || redis.HasErrorPrefix(err, "WRONGPASS")):
		return &AccessError{User: r.user, Command: redisQuoted(msg), Reply: msg}
	case isReply && strings.Contains(msg, "OOM command not allowed"):
		return fmt.Errorf("%w: redis %s for credential %q: %w", ErrOutOfMemory, op, credential, err)
	case isReply && !redisDidNotRun(err) && !redis.HasErrorPrefix(err, "BUSY"):
		return fmt.Errorf("quota: redis %s for credential %q: %w", op, credential, err)
	}
	return fmt.Errorf("%w: redis %s for credential %q: %w", ErrUnavailable, op, credential, err)
}

// redisQuoted returns the command a NOPERM reply names ("... to run the
// 'evalsha' command"), or "".
func redisQuoted(msg string) string {
	if parts := strings.Split(msg, "'"); len(parts) >= 3 {
		return parts[1]
	}
	return ""
}

// ErrOutOfMemory is wrapped by the error of a backend out of memory (Redis
// "OOM command not allowed" under maxmemory with noeviction): call sites
// fail closed on it whatever their policy.
var ErrOutOfMemory = errors.New("quota backend out of memory")

// AccessError reports that Redis refused trendfetch's user (NOPERM, NOAUTH,
// WRONGPASS): a configuration error (exit 2), never a reason to send calls
// unmetered. It names the user and the refused command, never the password.
type AccessError struct {
	// User is the Redis ACL user ("default" when the URL names none).
	User string
	// Command is the refused command, lower case, when Redis named one.
	Command string
	// Reply is Redis's error reply.
	Reply string
}

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

// waitConn takes one connection to the master holding credential's keys,
// for a reserve script followed by WAIT. On Cluster that is the master of
// the credential's slot (a MOVED during resharding fails the reservation).
func (r *redisBackend) waitConn(ctx context.Context, credential string) (*redis.Conn, error) {
	switch c := r.client.(type) {
	case *redis.Client:
		return c.Conn(), nil
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, r.stateKey(credential))
		if err != nil {
			return nil, err
		}
		return node.Conn(), nil
	}
	return nil, fmt.Errorf("wait_replicas needs a Client or ClusterClient, not %T", r.client)
}

// waitReplicated runs WAIT on conn, which has just admitted a call, and
// returns an error wrapping ErrUnavailable and errNotReplicated unless at
// least r.waitReplicas replicas acknowledged it (WithRedisWaitReplicas).
func (r *redisBackend) waitReplicated(ctx context.Context, conn *redis.Conn, credential string) error {
	got, err := conn.Wait(ctx, r.waitReplicas, r.waitTimeout).Result()
	if err != nil {
		return r.fail("reserve", credential, fmt.Errorf("admitted, but WAIT failed (the entry stays): %w", err))
	}
	if got < int64(r.waitReplicas) {
		return r.fail("reserve", credential, fmt.Errorf("%w: admitted, but WAIT confirmed %d of %d replicas within %s (the entry stays)", errNotReplicated, got, r.waitReplicas, r.waitTimeout))
	}
	return nil
}

// scan calls fn with each batch of keys of credential matching pattern, from
// SCAN on the node that owns the credential's slot (Cluster) and that node.
// Failures are r.fail(op).
func (r *redisBackend) scan(ctx context.Context, op, credential, pattern string, fn func(node redis.Cmdable, keys []string) error) error {
	if err := redisCheckCredential(credential); err != nil {
		return err
	}
	var node redis.Cmdable = r.client
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, r.stateKey(credential))
		if err != nil {
			return r.fail(op, credential, err)
		}
		node = n
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

// Reset deletes the usage keys of credential, its bucket logs and its
// state hash, and keeps its run leases (a running job keeps its region).
func (r *redisBackend) Reset(ctx context.Context, credential string) error {
	return r.scan(ctx, "reset", credential, redisGlobEscape(r.credTag(credential))+":*", func(node redis.Cmdable, keys []string) error {
		keys = slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, r.leaseKey(credential, "")) })
		if len(keys) == 0 {
			return nil
		}
		return node.Del(ctx, keys...).Err()
	})
}
