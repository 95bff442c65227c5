package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Quota is the `quota` section: the limiter's backend ("" = redis when configured, else sqlite),
// buckets, costs and policies.
type Quota struct {
	Backend  string                      `yaml:"backend"`
	SQLite   QuotaSQLite                 `yaml:"sqlite"`
	Redis    QuotaRedis                  `yaml:"redis"`
	Buckets  Buckets                     `yaml:"buckets"`
	Costs    map[string]map[string]int64 `yaml:"costs"`    // method -> bucket -> units
	Policies map[string]callsite.Policy  `yaml:"policies"` // method -> backend-failure policy
	// Reserve is this host's outage reserve per bucket: units ("50") or a percent of its limit
	// ("5%"); ReserveFor how long after its refill it may be spent (docs/quota.md).
	Reserve    map[string]string `yaml:"reserve"`
	ReserveFor Duration          `yaml:"reserve_for"`
	// Preset names the buckets and costs started from (callsite.Preset).
	Preset   string `yaml:"preset"`
	Headroom int    `yaml:"headroom"` // percent of each google-2026 limit kept back
}

// QuotaSQLite is quota.sqlite, the embedded backend.
type QuotaSQLite struct {
	Path string `yaml:"path"`
}

// BucketConfig is one entry of quota.buckets; Algorithm may only be log;
// Remove removes the preset's bucket Name.
type BucketConfig struct {
	Name      string   `yaml:"name"`
	Limit     int64    `yaml:"limit"`
	Window    Duration `yaml:"window"`
	Calendar  bool     `yaml:"calendar"`
	Shadow    bool     `yaml:"shadow"` // records and counts would-be denials, never denies (docs/quota.md)
	Algorithm string   `yaml:"algorithm"`
	Remove    bool     `yaml:"remove"`
	key       string   // the entry as the file wrote it ("quota.buckets[0]"); "" = the preset's
}

// Buckets are the quota buckets in display order: a file's entry replaces the preset's bucket of
// its name whole or is added; {name: N, remove: true} removes bucket N.
type Buckets []BucketConfig

// UnmarshalYAML merges the file's list into bs; errors name the entry.
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
			return fmt.Errorf("line %d: %s.name %s: given twice", n.Content[i].Line, b.key, termtext.Clip(b.Name, 64))
		case b.Remove && at < 0:
			return fmt.Errorf("line %d: %s: remove: true, but there is no bucket %q to remove (have %s)", n.Content[i].Line, b.key, termtext.Clip(b.Name, 64), strings.Join(bs.names(), ", "))
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

// field names bucket i's field as the file wrote it.
func (bs Buckets) field(i int, name string) string {
	if bs[i].key != "" {
		return bs[i].key + "." + name
	}
	return fmt.Sprintf("quota.buckets[%d].%s", i, name)
}

func defaultQuota() Quota {
	q := Quota{Preset: callsite.PresetClassic, Policies: map[string]callsite.Policy{}}
	_ = q.setPreset(q.Preset, 0) // the classic preset cannot fail
	q.Redis.WaitTimeout = Duration(quota.DefaultRedisWaitTimeout)
	q.ReserveFor = Duration(time.Hour)
	for _, site := range callsite.All() {
		q.Policies[site.Name] = site.Policy
	}
	return q
}

// setPreset sets preset name's buckets and costs, keeping headroom percent back from each limit.
func (q *Quota) setPreset(name string, headroom int) error {
	if headroom < 0 || headroom > 90 {
		return invalid("quota.headroom", headroom, "want a percent 0-90")
	}
	if headroom != 0 && name != callsite.PresetGoogle2026 {
		return invalid("quota.headroom", headroom, "applies to preset google-2026 (classic already keeps 5%% back)")
	}
	pb, pc, ok := callsite.Preset(name)
	if !ok {
		return invalid("quota.preset", termtext.Clip(name, 40), "want %s", strings.Join(callsite.Presets(), " or "))
	}
	q.Buckets, q.Costs = nil, pc
	for _, b := range pb {
		limit := max(b.Limit*int64(100-headroom)/100, 1)
		q.Buckets = append(q.Buckets, BucketConfig{Name: b.Name, Limit: limit, Window: Duration(b.Window), Calendar: b.Calendar})
	}
	return nil
}

// Limits converts the buckets and costs into the quota package's types, checked by quota.New;
// errors are *ValidationError naming the file's key.
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
		buckets = append(buckets, quota.Bucket{Name: b.Name, Limit: b.Limit, Window: time.Duration(b.Window), Calendar: b.Calendar, Shadow: b.Shadow})
	}
	if len(c.Quota.Costs) == 0 {
		return nil, nil, invalid("quota.costs", "{}", "at least one method cost is needed")
	}
	costs := quota.Costs{}
	for _, m := range slices.Sorted(maps.Keys(c.Quota.Costs)) {
		per := c.Quota.Costs[m]
		if len(per) == 0 {
			return nil, nil, invalid("quota.costs."+m, "{}", "charges no bucket")
		}
		for _, bn := range slices.Sorted(maps.Keys(per)) {
			costs[m] = append(costs[m], quota.Charge{Bucket: bn, Units: per[bn]})
		}
	}
	var se *quota.SettingError
	var ce *quota.CostError
	switch _, err := quota.New(nil, buckets, costs); {
	case errors.As(err, &se):
		setting := "quota." + se.Setting
		i, field := 0, ""
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

// ReserveUnits returns quota.reserve in units per bucket (nil: none), or a *ValidationError: a
// bucket that is not configured or is a shadow one, a value that is not 1 to its limit units or
// 1-100%, a reserve_for that is not more than 0 and at most quota.MaxHoldFor.
func (c *Config) ReserveUnits() (map[string]int64, error) {
	if d := time.Duration(c.Quota.ReserveFor); d <= 0 || d > quota.MaxHoldFor {
		return nil, invalid("quota.reserve_for", d, "want more than 0 and at most %s", quota.MaxHoldFor)
	}
	out := map[string]int64{}
	for _, name := range slices.Sorted(maps.Keys(c.Quota.Reserve)) {
		v, key := c.Quota.Reserve[name], "quota.reserve."+termtext.Clip(name, 64)
		i := slices.IndexFunc(c.Quota.Buckets, func(b BucketConfig) bool { return b.Name == name })
		if i < 0 || c.Quota.Buckets[i].Shadow {
			return nil, invalid(key, v, "no enforced bucket of that name (have %s)", strings.Join(c.Quota.Buckets.names(), ", "))
		}
		limit := c.Quota.Buckets[i].Limit
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "%"), 10, 64)
		if strings.HasSuffix(v, "%") && err == nil && n >= 1 && n <= 100 {
			n = max(limit*n/100, 1)
		} else if err != nil || n < 1 || n > limit || strings.HasSuffix(v, "%") {
			return nil, invalid(key, termtext.Clip(v, 40), "want units 1-%d, or a percent of the limit such as 5%%", limit)
		}
		out[name] = n
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Policy returns method's backend-failure policy: configured, else its call site's, else fail-open.
func (c *Config) Policy(method string) callsite.Policy {
	if p, ok := c.Quota.Policies[method]; ok {
		return p
	}
	if site, ok := callsite.Lookup(method); ok {
		return site.Policy
	}
	return callsite.FailOpen
}
