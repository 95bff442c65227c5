// Package config loads trendfetch's configuration: defaults, YAML file,
// environment, flags (the Settings table), then Validate before any I/O.
// Secrets come only from the environment or files, never from the YAML.
package config

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Config is the whole configuration, one field per YAML section; start from Default() or Load.
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

// Duration is a duration as the config file and flags take it (package duration).
type Duration = duration.Duration

// Runs is the `runs` section: the region lease's TTL (docs/design.md §5), a run's deadline (0 =
// none), node_exporter's textfile directory ("" = off), and the check-in URL's file.
type Runs struct {
	LeaseTTL        Duration `yaml:"lease_ttl"`
	Timeout         Duration `yaml:"timeout"`
	MetricsTextfile string   `yaml:"metrics_textfile"`
	CheckinURLFile  string   `yaml:"checkin_url_file"`
	// CheckinURL is a healthchecks.io ping URL (package checkin), a secret: never from YAML.
	CheckinURL string `yaml:"-"`
}

// API is the `api` section: base URL ("" = Google's), one request's timeout, maxResults (1-50),
// retries of a 5xx, timeout or reset (each reserved), and the first backoff (doubling, capped 30s).
type API struct {
	Endpoint     string   `yaml:"endpoint"`
	Timeout      Duration `yaml:"timeout"`
	PageSize     int64    `yaml:"page_size"`
	Retries      int      `yaml:"retries"`
	RetryBackoff Duration `yaml:"retry_backoff"`
}

// Log is the `log` section: level and format (settings table).
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Default returns the built-in configuration, completed.
func Default() *Config {
	c := defaults()
	c.complete()
	return c
}

// The defaults' credential, and the variable a key is read from by default.
const (
	DefaultCredential = "default"
	DefaultKeyEnv     = "YOUTUBE_API_KEY"
)

// defaults is Default before complete: the base the file, environment and flags apply over.
func defaults() *Config {
	run := callsite.RunDefaults()
	c := &Config{
		Credentials: []Credential{{Name: DefaultCredential, KeyEnv: DefaultKeyEnv}},
		API:         API{Timeout: Duration(run.Timeout), PageSize: run.PageSize, Retries: run.Retries, RetryBackoff: Duration(run.RetryBackoff)},
		Channels:    Refresh{Refresh: Duration(24 * time.Hour)},
		Categories:  Refresh{Refresh: Duration(7 * 24 * time.Hour)}, // categories rarely change
		Quota:       defaultQuota(),
		Runs:        Runs{LeaseTTL: Duration(run.LeaseTTL), Timeout: Duration(15 * time.Minute)},
		Stats:       Stats{TrackFor: Duration(run.StatsTrackFor), Every: Duration(run.StatsEvery)},
		Store:       StoreSettings{RefreshPerDay: 20},
	}
	for _, s := range settings {
		if s.Default != "" {
			s.set(c, s.Default)
		}
	}
	return c
}

// complete fills derived defaults and normalizes, after every source and before Validate; idempotent.
func (c *Config) complete() {
	for i, cr := range c.Credentials {
		if cr.KeyEnv == "" { // api_key_file is read after it (docs/operations.md "Secrets")
			c.Credentials[i].KeyEnv = DefaultKeyEnv
		}
	}
	if rs, err := regions.ParseList(c.Regions); err == nil {
		c.Regions = rs
	}
	if c.API.Endpoint != "" && !strings.HasSuffix(c.API.Endpoint, "/") {
		c.API.Endpoint += "/"
	}
	if dir := xdgDir("XDG_DATA_HOME", ".local", "share"); c.Database == "" && dir != "" {
		c.Database = filepath.Join(dir, "trendfetch.db")
	}
	c.completeQuota()
	for i, s := range c.Searches {
		c.Searches[i].MaxPages = cmp.Or(s.MaxPages, 1)
		if rs, err := regions.ParseList(s.Regions); err == nil {
			c.Searches[i].Regions = rs
		}
	}
	c.Schedule.complete(len(c.Regions))
	c.Serve.complete()
}

// completeQuota fills the quota backend (redis when Redis is configured, else sqlite), the
// preset and the SQLite quota path (beside a SQLite database; in the data directory beside a
// PostgreSQL one).
func (c *Config) completeQuota() {
	if c.Quota.Backend == "" {
		c.Quota.Backend = "sqlite"
		if c.Quota.Redis.Configured() {
			c.Quota.Backend = "redis"
		}
	}
	c.Quota.Preset = cmp.Or(c.Quota.Preset, callsite.PresetClassic)
	if c.Quota.SQLite.Path != "" || c.Database == "" {
		return
	}
	if store.EngineOf(c.Database) != store.PostgreSQL {
		c.Quota.SQLite.Path = filepath.Join(filepath.Dir(c.Database), "quota.db")
	} else if dir := xdgDir("XDG_DATA_HOME", ".local", "share"); dir != "" {
		c.Quota.SQLite.Path = filepath.Join(dir, "quota.db")
	}
}

// Validate checks c without I/O, each section by its own validate; the first problem is a
// *ValidationError or *regions.Error.
func (c *Config) Validate() error {
	if c.Database == "" {
		return invalid("database", `""`, "no data directory: HOME and XDG_DATA_HOME are unset; set database in the config (or --database, %s), or set HOME", Lookup("database").Env)
	}
	_, _, limitsErr := c.Limits()
	return cmp.Or(c.validateCredentials(), c.validateRegions(), c.API.validate(), c.Runs.validate(), c.Stats.validate(),
		c.Store.validate(), c.validateQuota(), limitsErr, c.validateCallSites(), c.Chart.validate(), c.validateSearches(),
		c.validateRefresh(), c.validatePolicies(), c.Log.validate(), c.Serve.validate(), c.Schedule.validate(c.Regions))
}

// validateCredentials checks credentials (names unique and valid, systemd credential names)
// and that credential names one of them.
func (c *Config) validateCredentials() error {
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
	return nil
}

// validateRegions checks regions: at least one, each a supported region code.
func (c *Config) validateRegions() error {
	if len(c.Regions) == 0 {
		return invalid("regions", "[]", "at least one region is needed")
	}
	if _, err := regions.ParseList(c.Regions); err != nil {
		return fmt.Errorf("config: regions: %w", err)
	}
	return nil
}

// validate checks the api section.
func (a API) validate() error {
	if a.Endpoint != "" && !strings.HasPrefix(a.Endpoint, "http://") && !strings.HasPrefix(a.Endpoint, "https://") {
		return invalid("api.endpoint", a.Endpoint, "want an http:// or https:// URL")
	}
	switch {
	case a.Timeout <= 0:
		return invalid("api.timeout", time.Duration(a.Timeout), "must be > 0")
	case a.RetryBackoff < 0:
		return invalid("api.retry_backoff", a.RetryBackoff.Std(), "must be 0 or positive")
	case a.PageSize < 1 || a.PageSize > callsite.MaxIDs:
		return invalid("api.page_size", a.PageSize, "must be 1-%d (the API's maxResults range)", callsite.MaxIDs)
	case a.Retries < 0 || a.Retries > 10:
		return invalid("api.retries", a.Retries, "must be 0-10 (every attempt costs quota)")
	}
	return nil
}

// validate checks the runs section.
func (r Runs) validate() error {
	if r.Timeout < 0 {
		return invalid("runs.timeout", r.Timeout.Std(), "must be 0 (no deadline) or positive, e.g. 15m")
	}
	// Renewals (every third) must survive a slow backend; a crashed run blocks its region one TTL.
	if ttl := r.LeaseTTL.Std(); ttl < time.Second || ttl > 24*time.Hour {
		return invalid("runs.lease_ttl", ttl, "must be between 1s and 24h0m0s")
	}
	if u, err := url.Parse(r.CheckinURL); r.CheckinURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		return invalid("TRENDFETCH_CHECKIN_URL (or runs.checkin_url_file)", "(set; a secret, not shown)", "must be an http:// or https:// ping URL such as https://hc-ping.com/PING_KEY/trendfetch-{region}")
	}
	return nil
}

// validate checks the log section.
func (l Log) validate() error {
	return cmp.Or(oneOf("log.level", l.Level, "trace", "debug", "info", "warn", "error"),
		oneOf("log.format", l.Format, "auto", "json", "console"))
}

// ValidationError names the config field, the value and why it is wrong.
type ValidationError struct {
	Field  string
	Value  any
	Reason string
}

// ExitCode is exitcode.Usage: a setting that cannot be used.
func (e *ValidationError) ExitCode() int { return exitcode.Usage }

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

// validName accepts a credential's or bucket's name.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`).MatchString
