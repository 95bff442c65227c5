// Package redisconn builds trendfetch's go-redis clients (standalone,
// Sentinel or Cluster) from quota.redis settings, with the short timeouts a
// limiter decision needs, keeping passwords out of its errors.
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

// Defaults of New: failures surface fast and the call site's policy
// applies (docs/design.md §4 "Short timeouts"). Scripts that must not run
// twice opt out of the retry per command.
const (
	defaultDialTimeout = 300 * time.Millisecond
	defaultIOTimeout   = 300 * time.Millisecond // each read and write
	defaultMaxRetries  = 1                      // go-redis: 0 = its default of 3
)

// Sentinel is a Redis Sentinel deployment for New (the zero value: none):
// the master's name, host:port of some Sentinels, and the Sentinels' own
// user ("" = default) and password. The URL's host is then ignored (but for
// TLS); user, password, db and TLS still come from it.
type Sentinel struct {
	Master             string
	Addrs              []string
	Username, Password string
}

// New builds a go-redis client with short timeouts (dial, read and write
// 300ms, one retry; URL parameters such as ?dial_timeout=1s win), without
// connecting. rawURL is go-redis ParseURL syntax. With cluster ("host:port"
// of some nodes) it is a *redis.ClusterClient (db 0 only), with a Sentinel
// a failover *redis.Client, both taking user, password and TLS from rawURL
// ("" = none); otherwise rawURL is required. Errors never hold a password.
func New(rawURL string, cluster []string, cfg Sentinel) (redis.UniversalClient, error) {
	sentinel := cfg.Master != "" || len(cfg.Addrs) > 0
	switch {
	case sentinel && len(cluster) > 0:
		return nil, errors.New("redisconn: Redis Sentinel and Redis Cluster addresses cannot be combined")
	case sentinel && cfg.Master == "":
		return nil, errors.New("redisconn: Redis Sentinel addresses without a master name")
	case sentinel && len(cfg.Addrs) == 0:
		return nil, fmt.Errorf("redisconn: Redis Sentinel master %q without Sentinel addresses", cfg.Master)
	case !sentinel && (cfg.Username != "" || cfg.Password != ""):
		return nil, errors.New("redisconn: a Sentinel username or password without Sentinel addresses")
	case rawURL == "" && len(cluster) == 0 && !sentinel:
		return nil, errors.New("redisconn: no Redis URL, no Redis Cluster and no Sentinel addresses")
	}
	o := &redis.Options{}
	if rawURL != "" {
		var err error
		if o, err = redis.ParseURL(rawURL); err != nil {
			return nil, fmt.Errorf("redisconn: invalid Redis URL %s: %s", redact(rawURL), URLProblem(rawURL))
		}
		if sentinel && o.Network == "unix" {
			return nil, fmt.Errorf("redisconn: Redis URL %s is a unix socket, but with Sentinel the master's address comes from the Sentinels: use redis:// or rediss://", redact(rawURL))
		}
	}
	o.DialTimeout = cmp.Or(o.DialTimeout, defaultDialTimeout)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, defaultIOTimeout)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, defaultIOTimeout)
	o.PoolTimeout = cmp.Or(o.PoolTimeout, o.DialTimeout+o.ReadTimeout)
	o.MaxRetries = cmp.Or(o.MaxRetries, defaultMaxRetries)
	// One dial attempt per command (a dead Redis fails fast).
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
		u.MasterName, u.Addrs = cfg.Master, slices.Clone(cfg.Addrs)
		u.SentinelUsername, u.SentinelPassword = cfg.Username, cfg.Password
		return redis.NewFailoverClient(u.Failover()), nil
	}
	return redis.NewClient(o), nil
}

// redact returns rawURL with its password replaced by "xxxxx"; a URL that
// does not parse is not shown.
func redact(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "(not shown: it does not parse)"
}

// redisURLShape is the form the messages ask for.
const redisURLShape = "want redis://[user:password@]host:port/db (rediss:// for TLS, unix:///path/to.sock for a socket), special characters in the password percent-encoded (e.g. p%2Fw for p/w)"

// redisOptionRE matches go-redis's errors about a query option's value,
// keeping the option's name (a go-redis word), never the value.
var redisOptionRE = regexp.MustCompile(`^redis: invalid ([a-z_]+) (number|duration|boolean)`)

const noScheme = "no redis:// scheme: the value is not a URL (a file holding only the password is not enough)"

// urlProblems maps a piece of the parsers' error ("url: " + net/url's, or
// go-redis's) to what to tell the user, first match wins.
var urlProblems = []struct{ match, reason string }{
	{"invalid port", "the port is not a number (or the password holds an unencoded / # ? or @)"},
	{"escape", "a % is not followed by two hex digits (write % in a password as %25)"},
	{"missing protocol scheme", noScheme},
	{"first path segment", noScheme},
	{"url: ", "not a valid URL (a password holding / # ? or @ must be percent-encoded)"},
	{"invalid URL scheme", "the scheme is not redis, rediss or unix"},
	{"database number", "the database (the path /N or ?db=N) is not a number"},
	{"invalid URL path", "the path must be a database number only (e.g. /0)"},
	{"empty unix socket path", "a unix: URL needs the socket's path, e.g. unix:///run/redis/redis.sock"},
	{"unexpected option", "a query option is not one go-redis knows (such as dial_timeout, read_timeout, db, protocol; a password goes before the host: redis://:password@host:6379/0)"},
}

// URLProblem says which part of the Redis URL raw go-redis refuses (scheme,
// slashes, host or port, database, query option), quoting nothing of raw
// (the parsers' errors quote what they reject, maybe the password). It
// returns "" for a URL go-redis accepts.
func URLProblem(raw string) string {
	_, err := redis.ParseURL(raw)
	if err == nil {
		return ""
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = "url: " + ue.Err.Error()
	} else if u, _ := url.Parse(raw); u.Scheme == "" {
		msg = "missing protocol scheme"
	} else if (u.Scheme == "redis" || u.Scheme == "rediss") && !strings.HasPrefix(raw[len(u.Scheme):], "://") {
		return "the scheme " + u.Scheme + ": must be followed by // (" + u.Scheme + "://host:port), not a single / or none; " + redisURLShape
	}
	if m := redisOptionRE.FindStringSubmatch(msg); m != nil && m[1] != "database" {
		return "query option " + m[1] + " is not a valid " + m[2] + "; " + redisURLShape
	}
	for _, p := range urlProblems {
		if strings.Contains(msg, p.match) {
			return p.reason + "; " + redisURLShape
		}
	}
	return "go-redis cannot use it; " + redisURLShape
}
