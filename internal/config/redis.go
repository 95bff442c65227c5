package config

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/redisconn"
)

// QuotaRedis is quota.redis: the URL (a secret, never from YAML), Cluster seed addresses, Sentinel,
// and how many replicas an admission waits for (0 = none) and how long.
type QuotaRedis struct {
	URLFile      string        `yaml:"url_file"`
	Cluster      []string      `yaml:"cluster"`
	Sentinel     RedisSentinel `yaml:"sentinel"`
	WaitReplicas int           `yaml:"wait_replicas"`
	WaitTimeout  Duration      `yaml:"wait_timeout"`
	URL          string        `yaml:"-"`
}

// RedisSentinel is quota.redis.sentinel: the master's name (`sentinel monitor <master> ...`),
// host:port of some Sentinels, and the Sentinels' own user and password.
type RedisSentinel struct {
	Master       string   `yaml:"master"`
	Addrs        []string `yaml:"addrs"`
	Username     string   `yaml:"username"`
	PasswordFile string   `yaml:"password_file"`
	Password     string   `yaml:"-"`
}

// Configured reports whether a Sentinel master or address is set.
func (s RedisSentinel) Configured() bool { return s.Master != "" || len(s.Addrs) > 0 }

// Configured reports whether any Redis is configured: a URL, Cluster addresses or Sentinel.
func (r QuotaRedis) Configured() bool {
	return r.URL != "" || len(r.Cluster) > 0 || r.Sentinel.Configured()
}

// validateQuota checks the quota section's backend and its Redis settings (its buckets and
// costs: Limits).
func (c *Config) validateQuota() error {
	if c.Quota.Backend == "redis" && !c.Quota.Redis.Configured() {
		return invalid("quota.backend", "redis", "no Redis configured: set %s, quota.redis.url_file, quota.redis.cluster or quota.redis.sentinel", Lookup("quota.redis.url").Env)
	}
	return cmp.Or(oneOf("quota.backend", c.Quota.Backend, "sqlite", "redis"), c.Quota.Redis.validate(c.Quota.Backend == "redis"))
}

// validate checks quota.redis without connecting, never quoting the URL; used: the backend is
// redis.
func (r QuotaRedis) validate(used bool) error {
	if p := redisconn.URLProblem(r.URL); used && r.URL != "" && p != "" {
		s := Lookup("quota.redis.url")
		return invalid(s.Env+" / "+s.Secret, "(not shown: it may hold a password)", "%s", p)
	}
	return cmp.Or(r.validateAddrs(), r.validateSentinel(), r.validateWait(used))
}

// validateAddrs checks the Cluster and Sentinel addresses: host:port each.
func (r QuotaRedis) validateAddrs() error {
	for j, addrs := range [][]string{r.Cluster, r.Sentinel.Addrs} {
		for i, a := range addrs {
			key := fmt.Sprintf("quota.redis.%s[%d]", []string{"cluster", "sentinel.addrs"}[j], i)
			if host, port, err := net.SplitHostPort(a); err != nil || host == "" {
				return invalid(key, a, "want host:port, e.g. 10.0.0.5:26379")
			} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return invalid(key, a, "port %q: want 1-65535", port)
			}
		}
	}
	return nil
}

// validateSentinel checks that Sentinel's settings come together and fit the rest.
func (r QuotaRedis) validateSentinel() error {
	const auth = "needs quota.redis.sentinel.master and addrs: it authenticates to the Sentinels"
	s := r.Sentinel
	switch {
	case len(s.Addrs) > 0 && s.Master == "":
		return invalid("quota.redis.sentinel.master", `""`, "required with quota.redis.sentinel.addrs: the master name of `sentinel monitor <name> ...`")
	case s.Master != "" && len(s.Addrs) == 0:
		return invalid("quota.redis.sentinel.addrs", "[]", "at least one Sentinel host:port is needed for master %q", s.Master)
	case !s.Configured() && s.Username != "":
		return invalid("quota.redis.sentinel.username", s.Username, auth)
	case !s.Configured() && s.PasswordFile != "":
		return invalid("quota.redis.sentinel.password_file", s.PasswordFile, auth)
	case !s.Configured() && s.Password != "":
		return invalid(Lookup("quota.redis.sentinel.password").Env, "(set)", auth+"; unset it")
	case s.Configured() && len(r.Cluster) > 0:
		return invalid("quota.redis.sentinel", s.Master, "cannot be combined with quota.redis.cluster (Cluster fails over by itself): set one of them")
	case s.Configured() && strings.HasPrefix(r.URL, "unix:"):
		return invalid("quota.redis.sentinel", s.Master, "the Redis URL is a unix socket, but with Sentinel the master's address comes from the Sentinels: use redis:// or rediss://")
	}
	return nil
}

// validateWait checks wait_replicas and wait_timeout; used: the backend is redis.
func (r QuotaRedis) validateWait(used bool) error {
	// WAIT 0 blocks forever; a decision must never wait long (docs/design.md §4).
	const minWait, maxWait = time.Millisecond, 10 * time.Second
	switch {
	case r.WaitReplicas < 0:
		return invalid("quota.redis.wait_replicas", r.WaitReplicas, "must be >= 0 (0 = do not wait for replicas)")
	case r.WaitReplicas > 0 && !used:
		return invalid("quota.redis.wait_replicas", r.WaitReplicas, "applies to the redis quota backend only")
	case r.WaitReplicas > 0 && (r.WaitTimeout.Std() < minWait || r.WaitTimeout.Std() > maxWait):
		return invalid("quota.redis.wait_timeout", r.WaitTimeout.Std(), "must be between %s and %s", minWait, maxWait)
	}
	return nil
}
