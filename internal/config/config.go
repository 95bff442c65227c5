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

// complete fills derived defaults and normalizes, after every source and before Validate; idempotent.
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
	for i, s := range c.Searches {
		c.Searches[i].MaxPages = cmp.Or(s.MaxPages, 1)
		if rs, err := regions.ParseList(s.Regions); err == nil {
			c.Searches[i].Regions = rs
		}
	}
	c.Schedule.complete()
	c.Serve.complete()
}

// Validate checks c without I/O; the first problem is a *ValidationError or *regions.Error.
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
	for _, d := range []struct {
		key  string
		v    Duration
		want string
	}{
		{"runs.timeout", c.Runs.Timeout, "0 (no deadline) or positive, e.g. 15m"},
		{"api.retry_backoff", c.API.RetryBackoff, "0 or positive"},
		{"stats.track_for", c.Stats.TrackFor, "0 (off) or positive, e.g. 168h"},
		{"stats.every", c.Stats.Every, "0 (every run) or positive, e.g. 6h"},
		{"store.retention", c.Store.Retention, "0 (keep everything) or positive, e.g. 2160h"},
	} {
		if d.v < 0 {
			return invalid(d.key, d.v.Std(), "must be %s", d.want)
		}
	}
	// Renewals (every third) must survive a slow backend; a crashed run blocks its region one TTL.
	if ttl := c.Runs.LeaseTTL.Std(); ttl < time.Second || ttl > 24*time.Hour {
		return invalid("runs.lease_ttl", ttl, "must be between 1s and 24h0m0s")
	}
	if u, err := url.Parse(c.Runs.CheckinURL); c.Runs.CheckinURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		return invalid("runs.checkin_url", "(set; a secret, not shown)", "must be an http:// or https:// ping URL such as https://hc-ping.com/PING_KEY/trendfetch-{region}")
	}
	if c.API.PageSize < 1 || c.API.PageSize > callsite.MaxIDs {
		return invalid("api.page_size", c.API.PageSize, "must be 1-%d (the API's maxResults range)", callsite.MaxIDs)
	}
	if c.Quota.Backend == "redis" && !c.Quota.Redis.Configured() {
		return invalid("quota.backend", "redis", "no Redis configured: set %s, quota.redis.url_file, quota.redis.cluster or quota.redis.sentinel", Lookup("quota.redis.url").Env)
	}
	_, _, limitsErr := c.Limits()
	return cmp.Or(oneOf("quota.backend", c.Quota.Backend, "sqlite", "redis"), c.validateRedis(), limitsErr,
		c.validateCallSites(), c.validateIngest(), c.Store.validate(), c.validatePolicies(),
		oneOf("log.level", c.Log.Level, "trace", "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "auto", "json", "console"), c.Serve.validate(), c.Schedule.validate(c.Regions))
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

// validName accepts a credential's or bucket's name.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`).MatchString

// StoreSettings is the `store` section (docs/design.md §10): the storage policy ("" = store.InForce
// decides), Retention (> 0: runs and prune delete older captures, samples and unreferenced videos),
// RefreshPerDay (videos.list.refresh calls per credential a day under the amended policy; 0 = never),
// URLFile (a file holding a postgres:// URL, which replaces database).
type StoreSettings struct {
	Policy        store.Policy `yaml:"policy"`
	Retention     Duration     `yaml:"retention"`
	RefreshPerDay int          `yaml:"refresh_per_day"`
	URLFile       string       `yaml:"url_file"`
}

func (s StoreSettings) validate() error {
	if _, err := store.ParsePolicy(string(s.Policy)); err != nil {
		return invalid("store.policy", s.Policy, "%v", err)
	}
	if s.RefreshPerDay < 0 {
		return invalid("store.refresh_per_day", s.RefreshPerDay, "must be 0 (never refresh) or a positive count of calls, e.g. 20")
	}
	return nil
}

// Chart is the `chart` section: per region code, the videoCategoryIds fetched as narrowed charts.
type Chart struct {
	Categories map[string][]string `yaml:"categories"`
}

// Search is one entry of `searches`, a search.list query for Regions (empty = all): q, order
// (default relevance), published within PublishedAfter (0 = any), at most MaxPages of 50 (1-10).
type Search struct {
	Regions        []string `yaml:"regions"`
	Q              string   `yaml:"q"`
	Order          string   `yaml:"order"`
	PublishedAfter Duration `yaml:"published_after"`
	MaxPages       int      `yaml:"max_pages"`
}

// Refresh is `channels` or `categories`: whether it is on, and the age stored data is refetched at.
type Refresh struct {
	Enabled bool     `yaml:"enabled"`
	Refresh Duration `yaml:"refresh"`
}

// validateIngest checks chart, searches, channels, categories and retries.
func (c *Config) validateIngest() error {
	for region, cats := range c.Chart.Categories {
		if _, err := regions.Parse(region); err != nil {
			return fmt.Errorf("config: chart.categories: %w", err)
		}
		for _, id := range cats {
			if id == "" || len(id) > 4 {
				return invalid("chart.categories."+region, id, "want a videoCategoryId such as 10")
			}
		}
	}
	for i, s := range c.Searches {
		f := fmt.Sprintf("searches[%d]", i)
		if s.Q == "" {
			return invalid(f+".q", `""`, "a search needs query text")
		}
		if err := oneOf(f+".order", cmp.Or(s.Order, "relevance"), "date", "rating", "relevance", "title", "videoCount", "viewCount"); err != nil {
			return err
		}
		if s.PublishedAfter < 0 {
			return invalid(f+".published_after", s.PublishedAfter.Std(), "must not be negative")
		}
		if s.MaxPages < 1 || s.MaxPages > 10 {
			return invalid(f+".max_pages", s.MaxPages, "must be 1-10 (each page costs the search.list cost)")
		}
		if _, err := regions.ParseList(s.Regions); err != nil {
			return fmt.Errorf("config: %s.regions: %w", f, err)
		}
	}
	for name, r := range map[string]Refresh{"channels": c.Channels, "categories": c.Categories} {
		if r.Enabled && r.Refresh <= 0 {
			return invalid(name+".refresh", r.Refresh.Std(), "must be > 0")
		}
	}
	if c.API.Retries < 0 || c.API.Retries > 10 {
		return invalid("api.retries", c.API.Retries, "must be 0-10 (every attempt costs quota)")
	}
	return nil
}

// SearchesFor returns the searches configured for region.
func (c *Config) SearchesFor(region string) []Search {
	var out []Search
	for _, s := range c.Searches {
		if len(s.Regions) == 0 || slices.Contains(s.Regions, region) {
			out = append(out, s)
		}
	}
	return out
}

// Stats is the `stats` section: videos charted within TrackFor (0 = off) but not now are sampled
// with videos.batchGetStats at most once per Every.
type Stats struct {
	TrackFor Duration `yaml:"track_for"`
	Every    Duration `yaml:"every"`
}
