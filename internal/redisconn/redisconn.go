// Package redisconn builds trendfetch's go-redis clients (standalone,
// Sentinel or Cluster) from quota.redis settings, with the short timeouts
// a limiter decision needs, and keeps Redis passwords out of its errors.
// The quota backend and serve's per-client limiter both use it.
package redisconn

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of New. A limiter decision is one round trip of a few hundred
// microseconds; waiting seconds on a dead Redis would stall every call
// site, so failures surface fast and the call site's fail-open/closed
// policy applies (docs/design.md §4 "Backend failure").
const (
	// defaultDialTimeout bounds establishing one connection.
	defaultDialTimeout = 300 * time.Millisecond
	// defaultIOTimeout bounds each socket read and write.
	defaultIOTimeout = 300 * time.Millisecond
	// defaultMaxRetries is the number of retries of a failed command
	// (go-redis semantics: 0 means its default of 3, -1 disables). The
	// quota scripts that must not run twice opt out per command.
	defaultMaxRetries = 1
)

// Option adjusts New.
type Option func(*config)

type config struct {
	// sentinelMaster and sentinelAddrs select a Sentinel-managed master;
	// sentinelUser and sentinelPassword authenticate to the Sentinels.
	sentinelMaster                 string
	sentinelAddrs                  []string
	sentinelUser, sentinelPassword string
}

// WithSentinel makes New return a failover client (go-redis
// NewFailoverClient): the master named master is looked up from the Redis
// Sentinels at addrs ("host:port"), and connections follow it after a
// failover. User, password, db and TLS still come from the URL, whose host
// is then ignored except as the TLS server name of a rediss:// URL. It
// cannot be combined with Cluster addresses.
func WithSentinel(master string, addrs []string) Option {
	return func(c *config) { c.sentinelMaster, c.sentinelAddrs = master, slices.Clone(addrs) }
}

// WithSentinelAuth authenticates to the Sentinels of WithSentinel
// (Sentinel's own requirepass or ACL user, which may differ from the
// master's); username may be "" (the default user). It is an error without
// WithSentinel. The password is never part of an error of New.
func WithSentinelAuth(username, password string) Option {
	return func(c *config) { c.sentinelUser, c.sentinelPassword = username, password }
}

// New builds a go-redis client with short timeouts (dial 300ms, read and
// write 300ms, one retry; URL parameters such as ?dial_timeout=1s win).
//
// rawURL is redis://[user:password@]host[:port][/db][?param=value],
// rediss://... (TLS, server name from the host) or unix:///path/to.sock
// (go-redis ParseURL syntax). With cluster ("host:port" of some Cluster
// nodes) the result is a *redis.ClusterClient that takes user, password and
// TLS from rawURL (which may be empty; a db other than 0 is an error). With
// WithSentinel it is a failover *redis.Client that takes user, password, db
// and TLS from rawURL (which may be empty). Otherwise rawURL is required
// and the result is a *redis.Client. Sentinel with Cluster, or Sentinel
// with a unix:// URL, are errors. Errors never contain the password.
// No connection is made here; the first command dials.
func New(rawURL string, cluster []string, opts ...Option) (redis.UniversalClient, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	sentinel := cfg.sentinelMaster != "" || len(cfg.sentinelAddrs) > 0
	switch {
	case sentinel && len(cluster) > 0:
		return nil, errors.New("redisconn: Redis Sentinel and Redis Cluster addresses cannot be combined")
	case sentinel && cfg.sentinelMaster == "":
		return nil, errors.New("redisconn: Redis Sentinel addresses without a master name")
	case sentinel && len(cfg.sentinelAddrs) == 0:
		return nil, fmt.Errorf("redisconn: Redis Sentinel master %q without Sentinel addresses", cfg.sentinelMaster)
	case !sentinel && (cfg.sentinelUser != "" || cfg.sentinelPassword != ""):
		return nil, errors.New("redisconn: a Sentinel username or password without Sentinel addresses")
	case rawURL == "" && len(cluster) == 0 && !sentinel:
		return nil, errors.New("redisconn: no Redis URL, no Redis Cluster and no Sentinel addresses")
	}
	o := &redis.Options{}
	if rawURL != "" {
		var err error
		if o, err = redis.ParseURL(rawURL); err != nil {
			return nil, fmt.Errorf("redisconn: invalid Redis URL %s: %s", redact(rawURL), scrubSecret(err.Error(), rawURL))
		}
		if sentinel && o.Network == "unix" {
			return nil, fmt.Errorf("redisconn: Redis URL %s is a unix socket, but with Sentinel the master's address comes from the Sentinels: use redis:// or rediss://", redact(rawURL))
		}
	}
	o.DialTimeout = cmp.Or(o.DialTimeout, defaultDialTimeout)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, defaultIOTimeout)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, defaultIOTimeout)
	o.PoolTimeout = cmp.Or(o.PoolTimeout, o.DialTimeout+o.ReadTimeout)
	if o.MaxRetries == 0 {
		o.MaxRetries = defaultMaxRetries
	}
	// What every kind of client shares: one dial attempt per command (a
	// dead Redis fails fast), short retry backoffs, context deadlines.
	o.DialerRetries = 1
	o.MinRetryBackoff, o.MaxRetryBackoff = 8*time.Millisecond, 64*time.Millisecond
	o.ContextTimeoutEnabled = true
	u := &redis.UniversalOptions{
		Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
		DialTimeout: o.DialTimeout, DialerRetries: o.DialerRetries, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, PoolTimeout: o.PoolTimeout, MaxRetries: o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
	}
	switch {
	case len(cluster) > 0:
		if o.DB != 0 {
			return nil, fmt.Errorf("redisconn: Redis URL %s selects db %d, but Redis Cluster has only db 0", redact(rawURL), o.DB)
		}
		u.Addrs, u.MaxRedirects = cluster, 3
		return redis.NewClusterClient(u.Cluster()), nil
	case sentinel:
		// A dial during a failover fails fast, and the retry (after
		// backoff) asks the Sentinels again.
		u.MasterName, u.Addrs = cfg.sentinelMaster, cfg.sentinelAddrs
		u.SentinelUsername, u.SentinelPassword = cfg.sentinelUser, cfg.sentinelPassword
		return redis.NewFailoverClient(u.Failover()), nil
	}
	// A single server keeps every option of its URL (network, query settings).
	return redis.NewClient(o), nil
}

var userinfoRE = regexp.MustCompile(`(//[^/@]*?:)[^/@]*@`)

// redact returns rawURL with its password replaced by "xxxxx", for logs and
// errors; an unparsable URL has its userinfo password masked too.
func redact(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return userinfoRE.ReplaceAllString(rawURL, "${1}xxxxx@")
}

// scrubSecret removes the password of rawURL (and the raw URL itself) from msg.
func scrubSecret(msg, rawURL string) string {
	msg = strings.ReplaceAll(msg, rawURL, redact(rawURL))
	if m := userinfoRE.FindStringSubmatchIndex(rawURL); m != nil {
		if pw := rawURL[m[3] : m[1]-1]; pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}
