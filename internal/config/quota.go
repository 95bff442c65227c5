package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// Quota is the `quota` section: the limiter's backend, buckets, costs and
// policies. configs/trendfetch.example.yaml documents each key; the Redis
// URL and the Sentinels' password come from the environment or files only.
type Quota struct {
	// Backend is sqlite or redis ("" = redis when Redis is configured).
	Backend  string                      `yaml:"backend"`
	SQLite   QuotaSQLite                 `yaml:"sqlite"`
	Redis    QuotaRedis                  `yaml:"redis"`
	Buckets  Buckets                     `yaml:"buckets"`
	Costs    map[string]map[string]int64 `yaml:"costs"`    // method -> bucket -> units
	Policies map[string]callsite.Policy  `yaml:"policies"` // method -> backend-failure policy
	// Preset names the buckets and costs started from (callsite.Preset).
	Preset   string `yaml:"preset"`
	Headroom int    `yaml:"headroom"` // percent of each google-2026 limit kept back
}

// QuotaSQLite is quota.sqlite, the embedded backend.
type QuotaSQLite struct {
	Path string `yaml:"path"`
}

// QuotaRedis is quota.redis, the Redis backend (quota.WithRedisWaitReplicas
// for WaitReplicas).
type QuotaRedis struct {
	URLFile      string        `yaml:"url_file"`
	Cluster      []string      `yaml:"cluster"`
	Sentinel     RedisSentinel `yaml:"sentinel"`
	WaitReplicas int           `yaml:"wait_replicas"`
	WaitTimeout  Duration      `yaml:"wait_timeout"`
	URL          string        `yaml:"-"` // from TRENDFETCH_REDIS_URL or URLFile
}

// RedisSentinel is quota.redis.sentinel: the master's name, some Sentinels'
// host:port, and the Sentinels' own user and password (the master's
// password comes from the URL).
type RedisSentinel struct {
	Master       string   `yaml:"master"`
	Addrs        []string `yaml:"addrs"`
	Username     string   `yaml:"username"`
	PasswordFile string   `yaml:"password_file"`
	Password     string   `yaml:"-"` // from TRENDFETCH_REDIS_SENTINEL_PASSWORD or PasswordFile
}

// Configured reports whether a Sentinel master or address is set.
func (s RedisSentinel) Configured() bool { return s.Master != "" || len(s.Addrs) > 0 }

// Configured reports whether any Redis is configured: a URL, Cluster
// addresses or Sentinel.
func (r QuotaRedis) Configured() bool {
	return r.URL != "" || len(r.Cluster) > 0 || r.Sentinel.Configured()
}

// Bounds of quota.redis.wait_timeout: WAIT 0 would block forever; a
// decision must never wait for long (docs/design.md §4 "Short timeouts").
const (
	minWaitTimeout = time.Millisecond
	maxWaitTimeout = 10 * time.Second
)

// BucketConfig is one entry of quota.buckets. Algorithm may only be log
// (exact sliding-window logs; the approximate counter is serve's); Remove
// removes the preset's bucket of that name.
type BucketConfig struct {
	Name      string   `yaml:"name"`
	Limit     int64    `yaml:"limit"`
	Window    Duration `yaml:"window"`
	Calendar  bool     `yaml:"calendar"`
	Algorithm string   `yaml:"algorithm"`
	Remove    bool     `yaml:"remove"`
	key       string   // the entry as the file wrote it ("quota.buckets[0]"); "" = the preset's
}

// Buckets are the quota buckets in display order. The file's list is
// merged into the preset's buckets by name: an entry replaces the bucket of
// its name whole or, with a new name, is added after them;
// {name: N, remove: true} removes bucket N, and with it the preset's cost
// of each method charging N (unless quota.costs is given).
type Buckets []BucketConfig

// UnmarshalYAML merges the file's list into bs (the preset's buckets).
// Errors name the entry as written (quota.buckets[i]) and its line.
func (bs *Buckets) UnmarshalYAML(n *yaml.Node) error {
	var given []BucketConfig
	if err := n.Decode(&given); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, b := range given {
		b.key = fmt.Sprintf("quota.buckets[%d]", i)
		at := slices.IndexFunc(*bs, func(d BucketConfig) bool { return d.Name == b.Name })
		switch {
		case seen[b.Name]:
			return fmt.Errorf("line %d: %s.name %s: given twice", n.Content[i].Line, b.key, Truncate(b.Name, 64))
		case b.Remove && at < 0:
			return fmt.Errorf("line %d: %s: remove: true, but there is no bucket %q to remove (have %s)", n.Content[i].Line, b.key, Truncate(b.Name, 64), strings.Join(bs.names(), ", "))
		case b.Remove:
			*bs = slices.Delete(*bs, at, at+1)
		case at >= 0:
			(*bs)[at] = b
		default:
			*bs = append(*bs, b)
		}
		seen[b.Name] = true
	}
	return nil
}

func (bs Buckets) names() []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

// field names bucket i's field as the file wrote it, e.g.
// "quota.buckets[0].limit".
func (bs Buckets) field(i int, name string) string {
	if bs[i].key != "" {
		return bs[i].key + "." + name
	}
	return fmt.Sprintf("quota.buckets[%d].%s", i, name)
}

// defaultQuota is the classic preset's buckets and costs, each call site's
// policy (package callsite) and the Redis WAIT timeout's default.
func defaultQuota() Quota {
	q := Quota{Policies: map[string]callsite.Policy{}}
	_ = q.setPreset("", 0) // the classic preset cannot fail
	q.Redis.WaitTimeout = Duration(quota.DefaultRedisWaitTimeout)
	for _, site := range callsite.All() {
		q.Policies[site.Name] = site.Policy
	}
	return q
}

// setPreset sets the buckets and costs of preset name, with headroom
// percent kept back from each google-2026 limit. Errors name quota.preset or
// quota.headroom.
func (q *Quota) setPreset(name string, headroom int) error {
	if headroom < 0 || headroom > 90 {
		return invalid("quota.headroom", headroom, "want a percent 0-90")
	}
	if headroom != 0 && name != callsite.PresetGoogle2026 {
		return invalid("quota.headroom", headroom, "applies to preset google-2026 (classic already keeps 5%% back)")
	}
	pb, pc, ok := callsite.Preset(name)
	if !ok {
		return invalid("quota.preset", Truncate(name, 40), "want %s", strings.Join(callsite.Presets(), " or "))
	}
	q.Buckets, q.Costs = nil, pc
	for _, b := range pb {
		limit := max(b.Limit*int64(100-headroom)/100, 1)
		q.Buckets = append(q.Buckets, BucketConfig{Name: b.Name, Limit: limit, Window: Duration(b.Window), Calendar: b.Calendar})
	}
	return nil
}

// dropCostsOfMissingBuckets deletes the cost of each method charging a
// bucket q does not have (one the file removed): that call site is then off.
func (q *Quota) dropCostsOfMissingBuckets() {
	for m, per := range q.Costs {
		for b := range per {
			if !slices.Contains(q.Buckets.names(), b) {
				delete(q.Costs, m)
				break
			}
		}
	}
}

// noCost is the error for a call site this config enables (why) that has
// no cost, naming the key the file wrote: quota.buckets when it removed a
// bucket the preset's cost of site charges, else quota.costs.
func (c *Config) noCost(site, why string) error {
	_, costs, _ := callsite.Preset(c.Quota.Preset)
	for _, b := range sortedKeys(costs[site]) {
		if !slices.Contains(c.Quota.Buckets.names(), b) {
			return invalid("quota.buckets", "["+strings.Join(c.Quota.Buckets.names(), ", ")+"]",
				"%s has no cost, but %s: quota.buckets removes bucket %s, which its cost charges; keep the bucket or give quota.costs", site, why, b)
		}
	}
	return invalid("quota.costs", "{"+strings.Join(sortedKeys(c.Quota.Costs), ", ")+"}", "%s has no cost, but %s: add quota.costs.%s", site, why, site)
}

// PresetName is the preset the quota configuration started from, "classic"
// when none was given.
func (q Quota) PresetName() string {
	if q.Preset == "" {
		return callsite.PresetClassic
	}
	return q.Preset
}

// Limits converts the buckets and the cost table into the quota package's
// types. The buckets and costs themselves are checked by quota.New (their
// one home), whose *quota.SettingError and *quota.CostError become a
// *ValidationError naming the quota.* setting; what is left here is what
// only the file can get wrong: a name's characters, the algorithm, a
// window under 1ms, a method charging nothing.
func (c *Config) Limits() ([]quota.Bucket, quota.Costs, error) {
	if len(c.Quota.Buckets) == 0 {
		return nil, nil, invalid("quota.buckets", "[]", "at least one bucket is needed (an entry with remove: true removes one)")
	}
	buckets := make([]quota.Bucket, 0, len(c.Quota.Buckets))
	bs := c.Quota.Buckets
	for i, b := range bs {
		if !validName(b.Name) {
			return nil, nil, invalid(bs.field(i, "name"), fmt.Sprintf("%q", b.Name), "want 1-64 characters of A-Z a-z 0-9 . _ -")
		}
		switch b.Algorithm {
		case "", "log":
		case "counter":
			return nil, nil, invalid(bs.field(i, "algorithm"), b.Algorithm, "quota buckets are exact sliding-window logs; the approximate counter is for serve.rate_limit")
		default:
			return nil, nil, invalid(bs.field(i, "algorithm"), b.Algorithm, "want log (quota buckets are exact sliding-window logs)")
		}
		if !b.Calendar && time.Duration(b.Window) < time.Millisecond {
			return nil, nil, invalid(bs.field(i, "window"), time.Duration(b.Window), "must be at least 1ms (or set calendar: true)")
		}
		buckets = append(buckets, quota.Bucket{Name: b.Name, Limit: b.Limit, Window: time.Duration(b.Window), Calendar: b.Calendar})
	}
	if len(c.Quota.Costs) == 0 {
		return nil, nil, invalid("quota.costs", "{}", "at least one method cost is needed")
	}
	costs := quota.Costs{}
	for _, m := range sortedKeys(c.Quota.Costs) {
		per := c.Quota.Costs[m]
		if len(per) == 0 {
			return nil, nil, invalid("quota.costs."+m, "{}", "charges no bucket")
		}
		for _, bn := range sortedKeys(per) {
			costs[m] = append(costs[m], quota.Charge{Bucket: bn, Units: per[bn]})
		}
	}
	var se *quota.SettingError
	var ce *quota.CostError
	switch _, err := quota.New(nil, buckets, costs); {
	case errors.As(err, &se):
		setting := "quota." + se.Setting
		var i int
		var field string
		if _, err := fmt.Sscanf(se.Setting, "buckets[%d].%s", &i, &field); err == nil && i < len(bs) {
			setting = bs.field(i, field)
		}
		return nil, nil, invalid(setting, se.Value, "%s", se.Reason)
	case errors.As(err, &ce):
		return nil, nil, invalid("quota.costs."+ce.Method+"."+ce.Bucket, ce.Units,
			"exceeds bucket %q limit %d: such a call could never be admitted", ce.Bucket, ce.Limit)
	case err != nil:
		return nil, nil, invalid("quota", "", "%s", err)
	}
	return buckets, costs, nil
}

// Policy returns the backend-failure policy of method: its configured value,
// else the call site's default (package callsite), else fail-open.
func (c *Config) Policy(method string) callsite.Policy {
	if p, ok := c.Quota.Policies[method]; ok {
		return p
	}
	if site, ok := callsite.Lookup(method); ok {
		return site.Policy
	}
	return callsite.FailOpen
}

// validate checks the URL (for the redis backend, without quoting it), the
// Cluster and Sentinel addresses, their combination and the WAIT settings, naming the setting (backend is quota.backend).
func (r QuotaRedis) validate(backend string) error {
	if backend == "redis" {
		if err := validateRedisURL(r.URL); err != nil {
			return err
		}
	}
	for i, a := range r.Cluster {
		if err := checkHostPort(a); err != nil {
			return invalid(fmt.Sprintf("quota.redis.cluster[%d]", i), a, "%s", err)
		}
	}
	s := r.Sentinel
	for i, a := range s.Addrs {
		if err := checkHostPort(a); err != nil {
			return invalid(fmt.Sprintf("quota.redis.sentinel.addrs[%d]", i), a, "%s", err)
		}
	}
	switch {
	case len(s.Addrs) > 0 && s.Master == "":
		return invalid("quota.redis.sentinel.master", `""`, "required with quota.redis.sentinel.addrs: the master name of `sentinel monitor <name> ...`")
	case s.Master != "" && len(s.Addrs) == 0:
		return invalid("quota.redis.sentinel.addrs", "[]", "at least one Sentinel host:port is needed for master %q", s.Master)
	case !s.Configured() && s.Username != "":
		return invalid("quota.redis.sentinel.username", s.Username, "needs quota.redis.sentinel.master and addrs: it authenticates to the Sentinels")
	case !s.Configured() && s.PasswordFile != "":
		return invalid("quota.redis.sentinel.password_file", s.PasswordFile, "needs quota.redis.sentinel.master and addrs: it authenticates to the Sentinels")
	case !s.Configured() && s.Password != "":
		return invalid("TRENDFETCH_REDIS_SENTINEL_PASSWORD", "(set)", "needs quota.redis.sentinel.master and addrs: it authenticates to the Sentinels; unset it")
	case s.Configured() && len(r.Cluster) > 0:
		return invalid("quota.redis.sentinel", s.Master, "cannot be combined with quota.redis.cluster (Cluster fails over by itself): set one of them")
	}
	if s.Configured() && strings.HasPrefix(r.URL, "unix:") {
		return invalid("quota.redis.sentinel", s.Master, "the Redis URL is a unix socket, but with Sentinel the master's address comes from the Sentinels: use redis:// or rediss://")
	}
	if r.WaitReplicas < 0 {
		return invalid("quota.redis.wait_replicas", r.WaitReplicas, "must be >= 0 (0 = do not wait for replicas)")
	}
	if r.WaitReplicas > 0 {
		if backend != "redis" {
			return invalid("quota.redis.wait_replicas", r.WaitReplicas, "applies to the redis quota backend only, and quota.backend is %s", backend)
		}
		if t := r.WaitTimeout.Std(); t < minWaitTimeout || t > maxWaitTimeout {
			return invalid("quota.redis.wait_timeout", t, "must be between %s and %s", minWaitTimeout, maxWaitTimeout)
		}
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
