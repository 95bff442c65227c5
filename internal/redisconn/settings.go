package redisconn

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/duration"
)

// Settings is the quota.redis section: the URL (a secret: from the
// environment or URLFile, never YAML), Cluster seed addresses, Sentinel,
// and how many replicas an admission waits for (0 = none) and how long.
type Settings struct {
	URLFile      string            `yaml:"url_file"`
	Cluster      []string          `yaml:"cluster"`
	Sentinel     Sentinel          `yaml:"sentinel"`
	WaitReplicas int               `yaml:"wait_replicas"`
	WaitTimeout  duration.Duration `yaml:"wait_timeout"`
	URL          string            `yaml:"-"`
}

// Sentinel is the master's name (`sentinel monitor <master> ...`),
// host:port of some Sentinels, and the Sentinels' own user and password.
type Sentinel struct {
	Master       string   `yaml:"master"`
	Addrs        []string `yaml:"addrs"`
	Username     string   `yaml:"username"`
	PasswordFile string   `yaml:"password_file"`
	Password     string   `yaml:"-"`
}

// Configured reports whether a Sentinel master or address is set.
func (s Sentinel) Configured() bool { return s.Master != "" || len(s.Addrs) > 0 }

// Configured reports whether any Redis is configured: a URL, Cluster
// addresses or Sentinel.
func (r Settings) Configured() bool {
	return r.URL != "" || len(r.Cluster) > 0 || r.Sentinel.Configured()
}

// Bounds of WaitTimeout: WAIT 0 blocks forever; a decision must never wait
// long (docs/design.md §4 "Short timeouts").
const (
	MinWaitTimeout = time.Millisecond
	MaxWaitTimeout = 10 * time.Second
)

// SettingError is a setting Check refuses: Setting is its path (Check's
// prefix + e.g. "sentinel.addrs[0]"), Value what to show of it.
type SettingError struct {
	Setting string
	Value   any
	Reason  string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s = %v: %s", e.Setting, e.Value, e.Reason)
}

// Check checks r without connecting (used: the quota backend is Redis;
// prefix: the settings' path, "quota.redis."); it returns the first problem
// as a *SettingError, never quoting the URL.
func (r Settings) Check(prefix string, used bool) error {
	e := func(setting string, value any, format string, args ...any) error {
		return &SettingError{prefix + setting, value, strings.ReplaceAll(fmt.Sprintf(format, args...), "$.", prefix)}
	}
	if p := URLProblem(r.URL); used && r.URL != "" && p != "" {
		return e("url", "(not shown: it may hold a password)", "%s", p)
	}
	for i, a := range r.Cluster {
		if err := checkHostPort(a); err != nil {
			return e(fmt.Sprintf("cluster[%d]", i), a, "%s", err)
		}
	}
	s := r.Sentinel
	for i, a := range s.Addrs {
		if err := checkHostPort(a); err != nil {
			return e(fmt.Sprintf("sentinel.addrs[%d]", i), a, "%s", err)
		}
	}
	const auth = "needs $.sentinel.master and addrs: it authenticates to the Sentinels"
	switch {
	case len(s.Addrs) > 0 && s.Master == "":
		return e("sentinel.master", `""`, "required with $.sentinel.addrs: the master name of `sentinel monitor <name> ...`")
	case s.Master != "" && len(s.Addrs) == 0:
		return e("sentinel.addrs", "[]", "at least one Sentinel host:port is needed for master %q", s.Master)
	case !s.Configured() && s.Username != "":
		return e("sentinel.username", s.Username, auth)
	case !s.Configured() && s.PasswordFile != "":
		return e("sentinel.password_file", s.PasswordFile, auth)
	case !s.Configured() && s.Password != "":
		return e("sentinel.password", "(set)", auth+"; unset it")
	case s.Configured() && len(r.Cluster) > 0:
		return e("sentinel", s.Master, "cannot be combined with $.cluster (Cluster fails over by itself): set one of them")
	case s.Configured() && strings.HasPrefix(r.URL, "unix:"):
		return e("sentinel", s.Master, "the Redis URL is a unix socket, but with Sentinel the master's address comes from the Sentinels: use redis:// or rediss://")
	case r.WaitReplicas < 0:
		return e("wait_replicas", r.WaitReplicas, "must be >= 0 (0 = do not wait for replicas)")
	case r.WaitReplicas > 0 && !used:
		return e("wait_replicas", r.WaitReplicas, "applies to the redis quota backend only")
	case r.WaitReplicas > 0 && (r.WaitTimeout.Std() < MinWaitTimeout || r.WaitTimeout.Std() > MaxWaitTimeout):
		return e("wait_timeout", r.WaitTimeout.Std(), "must be between %s and %s", MinWaitTimeout, MaxWaitTimeout)
	}
	return nil
}

// checkHostPort accepts "host:port" with a non-empty host and a port 1-65535.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return errors.New("want host:port, e.g. 10.0.0.5:26379")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want 1-65535", port)
	}
	return nil
}
