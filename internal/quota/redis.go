package quota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of RedisClientFromURL. A limiter decision is one round trip of a
// few hundred microseconds; waiting seconds on a dead Redis would stall every
// call site, so failures surface fast and the call site's fail-open/closed
// policy applies (DESIGN.md §4 "Backend failure").
const (
	// defaultRedisDialTimeout bounds establishing one connection.
	defaultRedisDialTimeout = 300 * time.Millisecond
	// defaultRedisIOTimeout bounds each socket read and write.
	defaultRedisIOTimeout = 300 * time.Millisecond
	// defaultRedisMaxRetries is the number of retries of a failed command
	// (go-redis semantics: 0 means its default of 3, -1 disables). It does
	// not apply to the reserve and refund scripts: a command whose reply
	// was lost may have run, and those must not run twice
	// (redisOnceScript). A reserve whose reply is late is ErrUnavailable
	// (the call site's policy decides) and counted once when it ran.
	defaultRedisMaxRetries = 1
)

// defaultRedisKeyPrefix is the first component of every key the Redis
// backend writes: trendfetch:{<credential>}:<bucket>.
const defaultRedisKeyPrefix = "trendfetch"

// stateKeySuffix is the key suffix of a credential's state hash
// (trendfetch:{<credential>}:state): the upstream exhaustion marker (field
// "exhausted") and one cache field per bucket (redis_lua.go).
const stateKeySuffix = "state"

// reservedBucketName reports whether name cannot be a bucket's: "state" and
// "exhausted" (the state hash's key and marker field), "lease" and names
// starting with "lease:" (run leases, lease.go).
func reservedBucketName(name string) bool {
	return name == stateKeySuffix || name == "exhausted" || name == leaseKeyInfix || strings.HasPrefix(name, leaseKeyInfix+":")
}

// redisBackend is the shared quota Backend on Redis (standalone or Cluster):
// an exact weighted sliding-window log per bucket, decided by one Lua script
// per reservation with the Redis server's TIME as the only clock. The
// algorithm and key layout are documented in redis_lua.go; DESIGN.md §4 is
// the contract. It is safe for concurrent use by many goroutines, processes
// and hosts.
type redisBackend struct {
	client redis.UniversalClient
	prefix string
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

// DefaultRedisWaitTimeout is how long an admission waits for its replicas
// when WithRedisWaitReplicas is given a timeout <= 0 (and the default of
// quota.redis.wait_timeout).
const DefaultRedisWaitTimeout = 100 * time.Millisecond

// errNotReplicated is wrapped (together with ErrUnavailable) by Reserve's
// error when an admission was recorded on the master but WAIT did not
// confirm it on enough replicas in time (WithRedisWaitReplicas).
var errNotReplicated = errors.New("admission not confirmed by enough replicas")

// WithRedisWaitReplicas makes every admission count only once n replicas
// have it. Redis replication is asynchronous: a master that fails right
// after admitting a call may not have passed the entry on, and the promoted
// replica would admit that usage again. With n > 0, after the reserve script
// admits, Reserve runs WAIT n timeout on the same connection (WAIT counts
// the replicas that acknowledged that connection's writes); when fewer than
// n confirm within timeout (<= 0 means DefaultRedisWaitTimeout), Reserve
// returns no decision and an error wrapping ErrUnavailable and
// errNotReplicated, so the call site's fail-open/fail-closed policy
// applies. The entry stays recorded on the master: counting a call that is
// not made is the safe side. Denials never wait. An admission then takes a
// second round trip plus the replicas' acknowledgement. n = 0 (the default)
// disables the check. WAIT makes lost admissions unlikely, not impossible:
// Redis may still promote a replica that did not acknowledge (see the
// README, "Redis persistence and replication").
func WithRedisWaitReplicas(n int, timeout time.Duration) redisOption {
	return func(r *redisBackend) {
		r.waitReplicas, r.waitTimeout = max(n, 0), cmp.Or(max(timeout, 0), DefaultRedisWaitTimeout)
	}
}

// NewRedis returns a Redis backend using client, which it owns from now on
// (Close closes it). Build the client with RedisClientFromURL to get short
// timeouts; any redis.UniversalClient (Client, ClusterClient, FailoverClient)
// works, a Ring does not (the credential's keys must live on one node).
func NewRedis(client redis.UniversalClient, opts ...redisOption) *redisBackend {
	r := &redisBackend{client: client, prefix: defaultRedisKeyPrefix, midnights: redisMidnightTable, user: redisUser(client)}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Name returns "redis".
func (r *redisBackend) Name() string { return "redis" }

// Close closes the Redis client.
func (r *redisBackend) Close() error { return r.client.Close() }

// --- keys: every key of the Redis backend is built here ---------------------

// credTag is the key component shared by every key of a credential:
// "<prefix>:{<credential>}". The braces make <credential> the Redis Cluster
// hash tag, so a multi-bucket script touches a single slot (no CROSSSLOT).
func (r *redisBackend) credTag(credential string) string {
	return r.prefix + ":{" + credential + "}"
}

// bucketKey is the sorted-set log of one bucket: trendfetch:{<credential>}:<bucket>.
func (r *redisBackend) bucketKey(credential, bucket string) string {
	return r.credTag(credential) + ":" + bucket
}

// stateKey is the credential's state hash: trendfetch:{<credential>}:state.
func (r *redisBackend) stateKey(credential string) string {
	return r.credTag(credential) + ":" + stateKeySuffix
}

// leaseKeyInfix separates the credential tag from the region in lease keys:
// trendfetch:{<credential>}:lease:<region>. No bucket may be named
// "lease:<region>".
const leaseKeyInfix = "lease"

// leaseKey is the run lease of (credential, region): trendfetch:{<credential>}:lease:<region>.
func (r *redisBackend) leaseKey(credential, region string) string {
	return r.credTag(credential) + ":" + leaseKeyInfix + ":" + region
}

// leaseKeyOf returns the key of a lease name built by leaseName.
func (r *redisBackend) leaseKeyOf(name string) (key, credential string, err error) {
	credential, region, err := splitLeaseName(name)
	if err != nil {
		return "", "", err
	}
	if err := redisCheckCredential(credential); err != nil {
		return "", "", err
	}
	return r.leaseKey(credential, region), credential, nil
}

// credPattern matches every key of credential for SCAN (glob chars escaped).
func (r *redisBackend) credPattern(credential string) string {
	return redisGlobEscape(r.credTag(credential)) + ":*"
}

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

// fail classifies a Redis failure of op for credential (DESIGN.md §4,
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
	_, after, ok := strings.Cut(msg, "'")
	if !ok {
		return ""
	}
	cmd, _, ok := strings.Cut(after, "'")
	if !ok {
		return ""
	}
	return cmd
}

// ErrOutOfMemory is wrapped by the error of a backend that refused to
// record anything because it is out of memory (Redis "OOM command not
// allowed" under maxmemory with the noeviction policy). Call sites fail
// closed on it whatever their policy: sending unmetered calls until
// someone frees memory would spend the quota blind.
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
		return fmt.Sprintf("quota.redis: Redis user %q may not use trendfetch's keys (%s): grant it with ACL SETUSER %s ~%s:*", e.User, e.Reply, e.User, defaultRedisKeyPrefix)
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

// --- decisions: the scripts and the methods that run them are in
// redis_lua.go; what they share with the rest of the backend follows ---

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

// Reset deletes the usage keys of credential — its bucket logs and its
// exhaustion marker — found with SCAN over the credential's hash-tag
// pattern on the node that owns its slot; its run leases (lease_redis.go)
// are kept. Redis failures wrap ErrUnavailable.
func (r *redisBackend) Reset(ctx context.Context, credential string) error {
	if err := redisCheckCredential(credential); err != nil {
		return err
	}
	var node redis.Cmdable = r.client
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, r.stateKey(credential))
		if err != nil {
			return r.fail("reset", credential, err)
		}
		node = n
	}
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, r.credPattern(credential), 1000).Result()
		if err != nil {
			return r.fail("reset", credential, err)
		}
		// Run leases are not usage: a running job keeps its region.
		keys = slices.DeleteFunc(keys, func(k string) bool {
			return strings.HasPrefix(k, r.leaseKey(credential, ""))
		})
		if len(keys) > 0 {
			if err := node.Del(ctx, keys...).Err(); err != nil {
				return r.fail("reset", credential, err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// --- connection --------------------------------------------------------------

// RedisClientOption adjusts RedisClientFromURL.
type RedisClientOption func(*redisClientConfig)

type redisClientConfig struct {
	dial, io   time.Duration
	maxRetries int
	// sentinelMaster and sentinelAddrs select a Sentinel-managed master;
	// sentinelUser and sentinelPassword authenticate to the Sentinels.
	sentinelMaster                 string
	sentinelAddrs                  []string
	sentinelUser, sentinelPassword string
}

// WithRedisSentinel makes RedisClientFromURL return a failover client
// (go-redis NewFailoverClient): the master named master is looked up from
// the Redis Sentinels at addrs ("host:port"), and connections follow it
// after a failover (+switch-master). User, password, db and TLS still come
// from the URL, whose host is then ignored except as the TLS server name of
// a rediss:// URL; the Sentinels themselves are reached without a password
// unless WithRedisSentinelAuth gives one. It cannot be combined with
// Cluster addresses.
func WithRedisSentinel(master string, addrs []string) RedisClientOption {
	return func(c *redisClientConfig) {
		c.sentinelMaster, c.sentinelAddrs = master, slices.Clone(addrs)
	}
}

// WithRedisSentinelAuth authenticates RedisClientFromURL's connections to
// the Sentinels of WithRedisSentinel (Sentinel's own requirepass or ACL
// user, which may differ from the master's): username may be "" (the
// default user). It is an error without WithRedisSentinel. The password is
// never part of an error RedisClientFromURL returns.
func WithRedisSentinelAuth(username, password string) RedisClientOption {
	return func(c *redisClientConfig) { c.sentinelUser, c.sentinelPassword = username, password }
}

// withRedisDialTimeout sets the connection timeout (default defaultRedisDialTimeout).
// A dial_timeout query parameter in the URL wins.
func withRedisDialTimeout(d time.Duration) RedisClientOption {
	return func(c *redisClientConfig) { c.dial = d }
}

// WithRedisIOTimeout sets the read and write timeouts (default
// defaultRedisIOTimeout). read_timeout/write_timeout URL parameters win.
func WithRedisIOTimeout(d time.Duration) RedisClientOption {
	return func(c *redisClientConfig) { c.io = d }
}

// RedisClientFromURL builds a go-redis client with short timeouts. It is
// the one place the Redis clients of trendfetch are built.
//
// rawURL is redis://[user:password@]host[:port][/db][?param=value],
// rediss://... (TLS, server name from the host) or unix:///path/to.sock
// (go-redis ParseURL syntax; e.g. ?dial_timeout=1s). With clusterAddrs
// ("host:port" of some Cluster nodes) the result is a *redis.ClusterClient
// that takes user, password and TLS from rawURL (which may be empty; its
// host is then ignored, and a db other than 0 is an error). With
// WithRedisSentinel the result is a failover *redis.Client that takes user,
// password, db and TLS from rawURL (which may be empty; its host is
// ignored). Otherwise rawURL is required and the result is a *redis.Client.
// Sentinel and Cluster together, or Sentinel with a unix:// URL, are errors.
//
// Every variant gets the same dial, read/write, pool and retry settings.
// Errors never contain the password: URLs are redacted (redactRedisURL).
// No connection is made here; the first command dials.
func RedisClientFromURL(rawURL string, clusterAddrs []string, opts ...RedisClientOption) (redis.UniversalClient, error) {
	cfg := redisClientConfig{dial: defaultRedisDialTimeout, io: defaultRedisIOTimeout, maxRetries: defaultRedisMaxRetries}
	for _, o := range opts {
		o(&cfg)
	}
	sentinel := cfg.sentinelMaster != "" || len(cfg.sentinelAddrs) > 0
	switch {
	case sentinel && len(clusterAddrs) > 0:
		return nil, errors.New("quota: Redis Sentinel and Redis Cluster addresses cannot be combined")
	case sentinel && cfg.sentinelMaster == "":
		return nil, errors.New("quota: Redis Sentinel addresses without a master name")
	case sentinel && len(cfg.sentinelAddrs) == 0:
		return nil, fmt.Errorf("quota: Redis Sentinel master %q without Sentinel addresses", cfg.sentinelMaster)
	case !sentinel && (cfg.sentinelUser != "" || cfg.sentinelPassword != ""):
		return nil, errors.New("quota: a Sentinel username or password without Sentinel addresses")
	}
	o := &redis.Options{}
	if rawURL != "" {
		var err error
		o, err = redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("quota: invalid Redis URL %s: %s", redactRedisURL(rawURL), redisScrubSecret(err.Error(), rawURL))
		}
		if sentinel && o.Network == "unix" {
			return nil, fmt.Errorf("quota: Redis URL %s is a unix socket, but with Sentinel the master's address comes from the Sentinels: use redis:// or rediss://", redactRedisURL(rawURL))
		}
	} else if len(clusterAddrs) == 0 && !sentinel {
		return nil, errors.New("quota: no Redis URL, no Redis Cluster and no Sentinel addresses")
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = cfg.dial
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = cfg.io
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = cfg.io
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = cfg.maxRetries
	}
	if o.PoolTimeout == 0 {
		o.PoolTimeout = o.DialTimeout + o.ReadTimeout
	}
	// What every kind of client shares: one dial attempt per command (a
	// dead Redis fails fast), short retry backoffs, context deadlines.
	u := &redis.UniversalOptions{
		Username:              o.Username,
		Password:              o.Password,
		DB:                    o.DB,
		TLSConfig:             o.TLSConfig,
		DialTimeout:           o.DialTimeout,
		DialerRetries:         1,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		PoolTimeout:           o.PoolTimeout,
		MaxRetries:            o.MaxRetries,
		MinRetryBackoff:       8 * time.Millisecond,
		MaxRetryBackoff:       64 * time.Millisecond,
		ContextTimeoutEnabled: true,
	}
	switch {
	case len(clusterAddrs) > 0:
		if o.DB != 0 {
			return nil, fmt.Errorf("quota: Redis URL %s selects db %d, but Redis Cluster has only db 0", redactRedisURL(rawURL), o.DB)
		}
		u.Addrs, u.MaxRedirects = clusterAddrs, 3
		return redis.NewClusterClient(u.Cluster()), nil
	case sentinel:
		// A failover client dials the master the Sentinels name; a dial
		// during a failover fails fast, and the retry (after backoff) asks
		// the Sentinels again.
		u.MasterName, u.Addrs = cfg.sentinelMaster, cfg.sentinelAddrs
		u.SentinelUsername, u.SentinelPassword = cfg.sentinelUser, cfg.sentinelPassword
		return redis.NewFailoverClient(u.Failover()), nil
	}
	// A single server keeps every option of its URL (network, query
	// settings) plus the shared ones.
	o.DialerRetries = u.DialerRetries
	o.MinRetryBackoff, o.MaxRetryBackoff = u.MinRetryBackoff, u.MaxRetryBackoff
	o.ContextTimeoutEnabled = u.ContextTimeoutEnabled
	return redis.NewClient(o), nil
}

var redisUserinfoRE = regexp.MustCompile(`(//[^/@]*?:)[^/@]*@`)

// redactRedisURL returns rawURL with its password replaced by "xxxxx", for
// logs and errors; an unparsable URL has its userinfo password masked too.
func redactRedisURL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return redisUserinfoRE.ReplaceAllString(rawURL, "${1}xxxxx@")
}

// redisScrubSecret removes the password of rawURL (and the raw URL itself) from msg.
func redisScrubSecret(msg, rawURL string) string {
	msg = strings.ReplaceAll(msg, rawURL, redactRedisURL(rawURL))
	if m := redisUserinfoRE.FindStringSubmatchIndex(rawURL); m != nil {
		pw := rawURL[m[3] : m[1]-1]
		if pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}
