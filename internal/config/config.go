// Package config loads trendfetch's configuration: defaults, then a YAML
// file, then environment variables, then flags (the Settings table), then
// Validate before any I/O. Secrets (API keys, Redis passwords) come only from
// the environment or from key files, never from the YAML itself.
package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Config is the whole configuration, one field per section of the YAML
// file; configs/trendfetch.example.yaml documents every key with its
// default. The zero value is not useful: start from Default() or Load.
type Config struct {
	Database    string        `yaml:"database"`
	Credential  string        `yaml:"credential"` // the credential runs spend from
	Credentials []Credential  `yaml:"credentials"`
	Regions     []string      `yaml:"regions"` // upper case once completed
	API         API           `yaml:"api"`
	Chart       Chart         `yaml:"chart"`
	Searches    []Search      `yaml:"searches"`
	Channels    Refresh       `yaml:"channels"`
	Categories  Refresh       `yaml:"categories"`
	Quota       Quota         `yaml:"quota"`
	Log         Log           `yaml:"log"`
	Schedule    Schedule      `yaml:"schedule"`
	Runs        Runs          `yaml:"runs"`
	Stats       Stats         `yaml:"stats"`
	Store       StoreSettings `yaml:"store"`
	Serve       Serve         `yaml:"serve"`
}

// Duration is a duration in the config file and in flags: Go's syntax with
// days (package duration).
type Duration = duration.Duration

// Runs is the `runs` section: the region lease's time to live (renewed
// every third of it; it bounds how long a killed run blocks its region,
// docs/design.md §5), a run's deadline (0 = none), node_exporter's
// textfile directory ("" = off), and the check-in URL's file.
type Runs struct {
	LeaseTTL        Duration `yaml:"lease_ttl"`
	Timeout         Duration `yaml:"timeout"`
	MetricsTextfile string   `yaml:"metrics_textfile"`
	CheckinURLFile  string   `yaml:"checkin_url_file"`
	// CheckinURL is a monitor's ping URL in healthchecks.io's protocol
	// (package checkin; "{region}" becomes the region in lower case). It
	// holds a ping key, so it is a secret: from TRENDFETCH_CHECKIN_URL,
	// CheckinURLFile or the systemd credential checkin-url, never YAML.
	CheckinURL string `yaml:"-"`
}

// DefaultRunTimeout is runs.timeout's default: a full run takes seconds; 15
// minutes leaves room for every retry of every call.
const DefaultRunTimeout = 15 * time.Minute

// Bounds of runs.lease_ttl: renewals every third of it must be cheap and
// survive a slow backend (>= 1s); a crashed run must not block a region
// for more than a day.
const (
	minLeaseTTL = time.Second
	maxLeaseTTL = 24 * time.Hour
)

// API is the `api` section: the base URL ("" = Google's), one request's
// timeout, maxResults per page (1-50), how many times a call answered 5xx,
// timed out or reset is sent again (each attempt reserved), and the first
// backoff (doubling, full jitter, capped at 30s).
type API struct {
	Endpoint     string   `yaml:"endpoint"`
	Timeout      Duration `yaml:"timeout"`
	PageSize     int64    `yaml:"page_size"`
	Retries      int      `yaml:"retries"`
	RetryBackoff Duration `yaml:"retry_backoff"`
}

// Log is the `log` section: level (trace, debug, info, warn, error) and
// format (auto: console on a terminal, JSON otherwise; json; console).
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Default returns the built-in configuration, completed: the defaults the
// example config lists, from the settings table and package callsite.
func Default() *Config {
	c := defaults()
	c.complete()
	return c
}

// DefaultCredential names the credential of the defaults; DefaultKeyEnv is
// the environment variable a credential's key is read from by default.
const (
	DefaultCredential = "default"
	DefaultKeyEnv     = "YOUTUBE_API_KEY"
)

// defaults is Default before complete: the base that a file, the
// environment and flags are applied over before the one complete step.
func defaults() *Config {
	run := callsite.RunDefaults()
	c := &Config{
		Credentials: []Credential{{Name: DefaultCredential, KeyEnv: DefaultKeyEnv}},
		API:         API{Timeout: Duration(run.Timeout), PageSize: run.PageSize, Retries: run.Retries, RetryBackoff: Duration(run.RetryBackoff)},
		Channels:    Refresh{Enabled: false, Refresh: Duration(defaultChannelsRefresh)},
		Categories:  Refresh{Enabled: false, Refresh: Duration(defaultCategoriesRefresh)},
		Quota:       defaultQuota(),
		Runs:        Runs{LeaseTTL: Duration(run.LeaseTTL), Timeout: Duration(DefaultRunTimeout)},
		Stats:       Stats{TrackFor: Duration(run.StatsTrackFor), Every: Duration(run.StatsEvery)},
		Store:       StoreSettings{RefreshPerDay: DefaultRefreshPerDay},
	}
	if dir := xdgDir("XDG_DATA_HOME", ".local", "share"); dir != "" {
		c.Database = filepath.Join(dir, "trendfetch.db")
	}
	for _, s := range settings {
		if s.Default != "" {
			s.set(c, s.Default)
		}
	}
	return c
}

// complete fills in the defaults that depend on other settings and
// normalizes values (region codes upper case, when valid), in one step
// after every source and before Validate. It is idempotent and never fails.
func (c *Config) complete() {
	for i, cr := range c.Credentials {
		if cr.KeyEnv == "" && cr.KeyFile == "" {
			c.Credentials[i].KeyEnv = DefaultKeyEnv
		}
	}
	if rs, err := regions.ParseList(c.Regions); err == nil {
		c.Regions = rs
	}
	if c.API.Endpoint != "" && !strings.HasSuffix(c.API.Endpoint, "/") {
		c.API.Endpoint += "/"
	}
	if c.Quota.Backend == "" {
		c.Quota.Backend = "sqlite"
		if c.Quota.Redis.Configured() {
			c.Quota.Backend = "redis"
		}
	}
	c.Quota.Preset = cmp.Or(c.Quota.Preset, callsite.PresetClassic)
	if c.Quota.SQLite.Path == "" && c.Database != "" {
		if store.IsPostgresURL(c.Database) {
			if dir := xdgDir("XDG_DATA_HOME", ".local", "share"); dir != "" {
				c.Quota.SQLite.Path = filepath.Join(dir, "quota.db")
			}
		} else {
			c.Quota.SQLite.Path = filepath.Join(filepath.Dir(c.Database), "quota.db")
		}
	}
	c.completeIngest()
	c.Schedule.complete()
	c.Serve.complete()
}

// Validate checks the whole configuration without I/O and without changing
// it (Load and Default complete it first). It returns
// the first problem as a *ValidationError or *regions.Error.
func (c *Config) Validate() error {
	if c.Database == "" {
		return invalid("database", `""`, "no data directory: HOME and XDG_DATA_HOME are unset; set database in the config (or --database, %s), or set HOME", Lookup("database").Env)
	}
	if len(c.Credentials) == 0 {
		return invalid("credentials", "[]", "at least one credential is needed")
	}
	names := map[string]bool{}
	for i, cr := range c.Credentials {
		f := fmt.Sprintf("credentials[%d].name", i)
		if !validName(cr.Name) {
			return invalid(f, fmt.Sprintf("%q", cr.Name), "want 1-64 characters of A-Z a-z 0-9 . _ - (it names the quota scope, never the key)")
		}
		if names[cr.Name] {
			return invalid(f, cr.Name, "defined twice")
		}
		if strings.ContainsFunc(cr.KeyCredential, func(r rune) bool { return r == '/' || unicode.IsControl(r) }) {
			return invalid(fmt.Sprintf("credentials[%d].api_key_credential", i), cr.KeyCredential, "want a systemd credential name (LoadCredential=NAME:...): no / or control characters")
		}
		names[cr.Name] = true
	}
	if !names[c.Credential] {
		return invalid("credential", c.Credential, "no credential of that name (have %s)", strings.Join(slices.Sorted(maps.Keys(names)), ", "))
	}
	if len(c.Regions) == 0 {
		return invalid("regions", "[]", "at least one region is needed")
	}
	if _, err := regions.ParseList(c.Regions); err != nil {
		return fmt.Errorf("config: regions: %w", err)
	}
	if c.API.Endpoint != "" && !strings.HasPrefix(c.API.Endpoint, "http://") && !strings.HasPrefix(c.API.Endpoint, "https://") {
		return invalid("api.endpoint", c.API.Endpoint, "want an http:// or https:// URL")
	}
	if c.API.Timeout <= 0 {
		return invalid("api.timeout", time.Duration(c.API.Timeout), "must be > 0")
	}
	if c.Runs.Timeout < 0 {
		return invalid("runs.timeout", c.Runs.Timeout.Std(), "must be 0 (no deadline) or positive, e.g. 15m")
	}
	if ttl := c.Runs.LeaseTTL.Std(); ttl < minLeaseTTL || ttl > maxLeaseTTL {
		return invalid("runs.lease_ttl", ttl, "must be between %s and %s", minLeaseTTL, maxLeaseTTL)
	}
	if u, err := url.Parse(c.Runs.CheckinURL); c.Runs.CheckinURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		return invalid("runs.checkin_url", "(set; a secret, not shown)", "must be an http:// or https:// ping URL such as https://hc-ping.com/PING_KEY/trendfetch-{region}")
	}
	if c.API.PageSize < 1 || c.API.PageSize > callsite.MaxIDs {
		return invalid("api.page_size", c.API.PageSize, "must be 1-%d (the API's maxResults range)", callsite.MaxIDs)
	}
	if err := oneOf("quota.backend", c.Quota.Backend, "sqlite", "redis"); err != nil {
		return err
	}
	if c.Quota.Backend == "redis" && !c.Quota.Redis.Configured() {
		return invalid("quota.backend", "redis", "no Redis configured: set %s, quota.redis.url_file, quota.redis.cluster or quota.redis.sentinel", Lookup("quota.redis.url").Env)
	}
	if err := c.validateRedis(); err != nil {
		return err
	}
	if _, _, err := c.Limits(); err != nil {
		return err
	}
	if err := c.validateCallSites(); err != nil {
		return err
	}
	if err := c.validateIngest(); err != nil {
		return err
	}
	if err := c.Stats.validate(); err != nil {
		return err
	}
	if err := c.Store.validate(); err != nil {
		return err
	}
	for m, p := range c.Quota.Policies {
		if _, ok := c.Quota.Costs[m]; !ok {
			return invalid("quota.policies."+m, p, "no cost configured for this method in quota.costs")
		}
		if p != callsite.FailOpen && p != callsite.FailClosed {
			return invalid("quota.policies."+m, p, "want fail-open or fail-closed")
		}
	}
	if err := oneOf("log.level", c.Log.Level, "trace", "debug", "info", "warn", "error"); err != nil {
		return err
	}
	if err := oneOf("log.format", c.Log.Format, "auto", "json", "console"); err != nil {
		return err
	}
	if err := c.Serve.validate(); err != nil {
		return err
	}
	return c.Schedule.validate(c.Regions)
}

// ValidationError names the config field, the value and why it is wrong.
type ValidationError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("config: %s = %s: %s", e.Field, termtext.Clip(fmt.Sprint(e.Value), 200), e.Reason)
}

func invalid(field string, value any, format string, args ...any) error {
	return &ValidationError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// oneOf refuses a value of field that is not one of want, listing them.
func oneOf[T ~string](field string, value T, want ...T) error {
	if slices.Contains(want, value) {
		return nil
	}
	return invalid(field, value, "want %s", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(want)), ", "), "[]"))
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
