// Package config loads trendfetch's configuration: defaults, then a YAML
// file, then environment variables, then flags (applied by the CLI), then
// Validate before any I/O. Secrets (API keys, Redis passwords) come only from
// the environment or from key files, never from the YAML itself.
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
)

// Policy is what a call site does when the quota backend is unreachable.
type Policy = callsite.Policy

// The policies, declared in package callsite.
const (
	FailOpen   = callsite.FailOpen
	FailClosed = callsite.FailClosed
)

// Config is the whole configuration. The zero value is not useful; start
// from Default().
type Config struct {
	// Database is the SQLite file holding videos, runs and the FTS index.
	Database string `yaml:"database"`
	// Credential names the credential runs spend from (a key of Credentials).
	Credential string `yaml:"credential"`
	// Credentials are named Google Cloud projects; the quota scope is the name.
	Credentials []Credential `yaml:"credentials"`
	// Regions are the regionCode values `run --all` ingests, upper case.
	Regions []string `yaml:"regions"`
	API     API      `yaml:"api"`
	// Chart, Searches, Channels and Categories configure the call sites of a run.
	Chart      Chart    `yaml:"chart"`
	Searches   []Search `yaml:"searches"`
	Channels   Refresh  `yaml:"channels"`
	Categories Refresh  `yaml:"categories"`
	Quota      Quota    `yaml:"quota"`
	Log        Log      `yaml:"log"`
	// Schedule configures `trendfetch schedule` and `trendfetch crontab`.
	Schedule Schedule `yaml:"schedule"`
	// Runs configures how runs guard their region.
	Runs Runs `yaml:"runs"`
	// Stats configures following videos after they left the chart.
	Stats Stats `yaml:"stats"`
	// Store configures the database's contents (retention).
	Store StoreSettings `yaml:"store"`
	// Serve configures the read API and dashboard (`trendfetch serve`).
	Serve Serve `yaml:"serve"`

	// derived remembers the values Complete derived from other settings.
	derived struct{ backend, quotaDB string }
}

// Runs configures the run lease (docs/design.md §5: two runs of one region never
// overlap).
type Runs struct {
	// LeaseTTL is the region lease's time to live, renewed every third of it
	// while a run lasts. It bounds how long a run killed without cleanup
	// (SIGKILL, OOM, power loss) blocks its region (default 2m, 1s-24h).
	LeaseTTL Duration `yaml:"lease_ttl"`
	// Timeout is a run's deadline (default 15m; 0 = none): a region stuck in
	// API timeouts stops, is recorded as failed, and frees its slot.
	Timeout Duration `yaml:"timeout"`
	// MetricsTextfile is a directory (node_exporter's textfile collector's)
	// where `trendfetch run` writes each region's metrics after its run
	// ("" = off; --metrics-textfile overrides).
	MetricsTextfile string `yaml:"metrics_textfile"`
}

// DefaultRunTimeout is runs.timeout's default: a full run (categories, four
// chart pages, statistics, searches, channels) takes seconds; 15 minutes
// leaves room for every retry of every call.
const DefaultRunTimeout = 15 * time.Minute

// Bounds of runs.lease_ttl: renewals every third of it must be cheap and
// survive a slow backend (>= 1s); a crashed run must not block a region
// for more than a day.
const (
	minLeaseTTL = time.Second
	maxLeaseTTL = 24 * time.Hour
)

// Credential is one Google Cloud project and where its API key comes from.
// The key itself is never stored in Config: APIKey reads it when needed.
type Credential struct {
	// Name is the quota scope (Redis keys, runs table, quota status); it is
	// never the key itself. 1-64 characters of [A-Za-z0-9._-].
	Name string `yaml:"name"`
	// KeyEnv is the environment variable holding the API key (default YOUTUBE_API_KEY).
	KeyEnv string `yaml:"api_key_env"`
	// KeyFile is a file whose first line is the API key; used when KeyEnv is unset or empty.
	KeyFile string `yaml:"api_key_file"`
	// KeyCredential is the systemd credential holding the key
	// (LoadCredential=NAME:PATH in the unit), read from
	// $CREDENTIALS_DIRECTORY/NAME when neither KeyEnv nor KeyFile gives one
	// (default youtube-api-key-<name>, e.g. youtube-api-key-default).
	KeyCredential string `yaml:"api_key_credential"`
}

// Systemd credentials (LoadCredential=NAME:PATH) read from
// $CREDENTIALS_DIRECTORY when the environment and the files give nothing.
const (
	// KeyCredentialPrefix + a credential's name is its key's default.
	KeyCredentialPrefix = "youtube-api-key-"
	// RedisURLCredential holds the Redis URL (like TRENDFETCH_REDIS_URL).
	RedisURLCredential = "redis-url"
	// SentinelPasswordCredential holds the Sentinels' password.
	SentinelPasswordCredential = "redis-sentinel-password"
)

// systemdCredential returns the path of the systemd credential name when
// the service has a $CREDENTIALS_DIRECTORY holding it.
func systemdCredential(lookup func(string) (string, bool), name string) (string, bool) {
	dir, ok := lookup("CREDENTIALS_DIRECTORY")
	if !ok || dir == "" || name == "" || strings.ContainsAny(name, "/\x00") {
		return "", false
	}
	path := filepath.Join(dir, name)
	_, err := os.Stat(path)
	return path, err == nil
}

// API configures the YouTube Data API client.
type API struct {
	// Endpoint overrides the API base URL (e.g. the emulator,
	// http://127.0.0.1:8080/); "" means Google's.
	Endpoint string `yaml:"endpoint"`
	// Timeout bounds one HTTP request (default 30s).
	Timeout Duration `yaml:"timeout"`
	// PageSize is maxResults per videos.list page, 1-50 (default 50).
	PageSize int64 `yaml:"page_size"`
	// Retries is how many times a call answered 5xx, timed out or reset is
	// sent again (default 2); every attempt is reserved, as Google charges it.
	Retries int `yaml:"retries"`
	// RetryBackoff is the first backoff; it doubles per attempt, with full
	// jitter, capped at 30 s (default 1s).
	RetryBackoff Duration `yaml:"retry_backoff"`
}

// Quota configures the shared limiter: backend, buckets, costs, policies.
type Quota struct {
	// Backend is "sqlite" (embedded, one host) or "redis" (shared); "" picks
	// redis when a Redis URL, cluster or sentinel is configured, else sqlite.
	Backend string      `yaml:"backend"`
	SQLite  QuotaSQLite `yaml:"sqlite"`
	Redis   QuotaRedis  `yaml:"redis"`
	// Buckets per credential, in display order.
	Buckets []BucketConfig `yaml:"buckets"`
	// Costs maps an API method to the units one call costs per bucket.
	Costs map[string]map[string]int64 `yaml:"costs"`
	// Policies maps an API method (call site) to its backend-failure policy.
	Policies map[string]Policy `yaml:"policies"`
	// Preset names the buckets and costs started from: "classic" (the
	// default) or "google-2026" (Google's 2026 quota model, see
	// callsite.Preset). Buckets or costs given in the file override it.
	Preset string `yaml:"preset"`
	// Headroom is the percent of each google-2026 limit kept back for
	// ad-hoc use (0-90; classic already keeps 5%).
	Headroom int `yaml:"headroom"`
}

// QuotaSQLite configures the embedded backend.
type QuotaSQLite struct {
	// Path of the quota database (default beside Database, quota.db).
	Path string `yaml:"path"`
}

// QuotaRedis configures the Redis backend. The URL may carry a password, so
// it is read from TRENDFETCH_REDIS_URL or URLFile, never from YAML.
type QuotaRedis struct {
	// URLFile is a file holding a redis:// or rediss:// URL.
	URLFile string `yaml:"url_file"`
	// Cluster lists host:port seed addresses of a Redis Cluster (no secrets).
	Cluster []string `yaml:"cluster"`
	// Sentinel names a master managed by Redis Sentinel; the URL (optional
	// here) then gives only user, password, db and TLS, not the host.
	Sentinel RedisSentinel `yaml:"sentinel"`
	// WaitReplicas, when > 0, makes an admission count only after WAIT
	// confirms that this many replicas have it (default 0 = off). When
	// fewer confirm within WaitTimeout, the call site's fail-open or
	// fail-closed policy applies as for an unreachable Redis, and the entry
	// stays counted (see quota.WithRedisWaitReplicas).
	WaitReplicas int `yaml:"wait_replicas"`
	// WaitTimeout bounds each WAIT (default quota.DefaultRedisWaitTimeout,
	// 100ms; 1ms-10s). Used only when WaitReplicas > 0.
	WaitTimeout Duration `yaml:"wait_timeout"`
	// URL is filled from TRENDFETCH_REDIS_URL or URLFile; never from YAML.
	URL string `yaml:"-"`
}

// RedisSentinel is quota.redis.sentinel: the master's name as the Sentinels
// know it (`sentinel monitor <master> ...`), host:port addresses of some of
// the Sentinels, and how to authenticate to them when they require it (their
// own requirepass or ACL user; the master's password comes from the URL).
type RedisSentinel struct {
	Master string   `yaml:"master"`
	Addrs  []string `yaml:"addrs"`
	// Username is the Sentinels' ACL user ("" = the default user).
	Username string `yaml:"username"`
	// PasswordFile is a file holding the Sentinels' password, read when
	// TRENDFETCH_REDIS_SENTINEL_PASSWORD is not set.
	PasswordFile string `yaml:"password_file"`
	// Password is filled from TRENDFETCH_REDIS_SENTINEL_PASSWORD or
	// PasswordFile; never from YAML.
	Password string `yaml:"-"`
}

// Configured reports whether a Sentinel master or address is set.
func (s RedisSentinel) Configured() bool { return s.Master != "" || len(s.Addrs) > 0 }

// Configured reports whether any Redis is configured: a URL, Cluster
// addresses or Sentinel. The quota backend defaults to redis then.
func (r QuotaRedis) Configured() bool {
	return r.URL != "" || len(r.Cluster) > 0 || r.Sentinel.Configured()
}

// Bounds of quota.redis.wait_timeout: WAIT 0 would block forever; a
// decision must never wait for long (docs/design.md §4 "Short timeouts").
const (
	minWaitTimeout = time.Millisecond
	maxWaitTimeout = 10 * time.Second
)

// BucketConfig is one quota bucket in YAML.
type BucketConfig struct {
	Name     string   `yaml:"name"`
	Limit    int64    `yaml:"limit"`
	Window   Duration `yaml:"window"`
	Calendar bool     `yaml:"calendar"`
	// Algorithm may only be log (the default): quota buckets are exact
	// sliding-window logs. counter is refused with a pointer to
	// serve.rate_limit, where the approximate counter belongs.
	Algorithm string `yaml:"algorithm"`
}

// Log configures zerolog.
type Log struct {
	// Level is trace, debug, info, warn or error (default info).
	Level string `yaml:"level"`
	// Format is auto (console on a terminal, JSON otherwise), json or console.
	Format string `yaml:"format"`
}

// Default returns the built-in configuration: one credential "default" whose
// key is in YOUTUBE_API_KEY, region US, the database under the XDG data
// directory, the embedded quota backend, and the buckets, costs and
// policies of the call-site table (package callsite; docs/design.md §4), the
// run defaults of callsite.RunDefaults, with Complete applied.
func Default() *Config {
	c := defaults()
	c.Complete()
	return c
}

// defaults is Default before Complete: the base that a file, the
// environment and flags are applied over before the one Complete step.
func defaults() *Config {
	run := callsite.RunDefaults()
	database := ""
	if dataDir := DataDir(); dataDir != "" {
		database = filepath.Join(dataDir, "trendfetch.db")
	}
	return &Config{
		Database:    database,
		Credential:  "default",
		Credentials: []Credential{{Name: "default", KeyEnv: "YOUTUBE_API_KEY"}},
		Regions:     []string{"US"},
		API:         API{Timeout: Duration(run.Timeout), PageSize: run.PageSize, Retries: run.Retries, RetryBackoff: Duration(run.RetryBackoff)},
		Channels:    Refresh{Enabled: false, Refresh: Duration(defaultChannelsRefresh)},
		Categories:  Refresh{Enabled: false, Refresh: Duration(defaultCategoriesRefresh)},
		Quota:       defaultQuota(),
		Log:         Log{Level: "info", Format: "auto"},
		Runs:        Runs{LeaseTTL: Duration(run.LeaseTTL), Timeout: Duration(DefaultRunTimeout)},
		Stats:       Stats{TrackFor: Duration(run.StatsTrackFor), Every: Duration(run.StatsEvery)},
		Store:       StoreSettings{RefreshPerDay: DefaultRefreshPerDay},
	}
}

// defaultQuota derives the default buckets, cost table and policies from
// the call-site table (package callsite).
func defaultQuota() Quota {
	q := Quota{Costs: map[string]map[string]int64{}, Policies: map[string]Policy{}}
	q.Redis.WaitTimeout = Duration(quota.DefaultRedisWaitTimeout)
	for _, b := range callsite.Buckets() {
		q.Buckets = append(q.Buckets, BucketConfig{Name: b.Name, Limit: b.Limit, Window: Duration(b.Window)})
	}
	for _, site := range callsite.All() {
		q.Costs[site.Name] = site.Charges
		q.Policies[site.Name] = site.Policy
	}
	return q
}

// DataDir is $XDG_DATA_HOME/trendfetch, or ~/.local/share/trendfetch, or ""
// when neither XDG_DATA_HOME nor HOME is set (a bare cron or systemd
// environment): then the database must be configured, never guessed from
// the current directory (runs started from different directories would get
// different quota databases).
func DataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "trendfetch")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "share", "trendfetch")
}

// DefaultPath is $XDG_CONFIG_HOME/trendfetch/config.yaml, or
// ~/.config/trendfetch/config.yaml.
func DefaultPath() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "trendfetch", "config.yaml")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "trendfetch", "config.yaml")
}

// Parse decodes YAML from r over the defaults and applies Complete. Unknown
// keys are errors (a typo must not silently fall back to a default). It does
// no other I/O.
func Parse(r io.Reader) (*Config, error) {
	cfg, err := parse(r)
	if err != nil {
		return nil, err
	}
	cfg.Complete()
	return cfg, nil
}

// parse is Parse without Complete.
func parse(r io.Reader) (*Config, error) {
	cfg := defaults()
	raw, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read config: %w", err)
	}
	if len(raw) > MaxConfigBytes {
		return nil, fmt.Errorf("config is larger than %d KiB: a trendfetch config is a few KB; check the file", MaxConfigBytes>>10)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return cfg, nil
	}
	// Buckets, costs and policies replace the defaults wholesale when given,
	// so decode them into empty values first.
	var probe struct {
		Quota struct {
			Buckets yaml.Node `yaml:"buckets"`
			Costs   yaml.Node `yaml:"costs"`
		} `yaml:"quota"`
		Credentials yaml.Node `yaml:"credentials"`
		Regions     yaml.Node `yaml:"regions"`
	}
	if err := yaml.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("config is not valid YAML: %s", oneLine(err))
	}
	if probe.Quota.Buckets.Kind != 0 {
		cfg.Quota.Buckets = nil
	}
	if probe.Quota.Costs.Kind != 0 {
		cfg.Quota.Costs = nil
	}
	if probe.Credentials.Kind != 0 {
		cfg.Credentials = nil
	}
	if probe.Regions.Kind != 0 {
		cfg.Regions = nil
	}
	defaultPolicies := cfg.Quota.Policies
	cfg.Quota.Policies = nil
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err == nil {
		if err := unknownKey(&doc, reflect.TypeOf(Config{})); err != nil {
			msg := err.Error()
			if ke, ok := err.(*KeyError); ok && (ke.Key == "api_key" || ke.Key == "password" || ke.Key == "url") {
				msg += secretsHint
			}
			return nil, fmt.Errorf("config: %s", msg)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		msg := oneLine(err)
		if strings.Contains(msg, "api_key not found") || strings.Contains(msg, "field password not found") || strings.Contains(msg, "field url not found") {
			msg += secretsHint
		}
		return nil, fmt.Errorf("config: %s", msg)
	}
	if err := cfg.Quota.applyPreset(probe.Quota.Buckets.Kind == 0, probe.Quota.Costs.Kind == 0); err != nil {
		return nil, err
	}
	// Buckets given without costs: the default costs of a method charging a
	// bucket the file does not declare are dropped (a file written before
	// the stats bucket existed keeps working; that method is then off, e.g.
	// stats tracking), rather than failing validation.
	if probe.Quota.Buckets.Kind != 0 && probe.Quota.Costs.Kind == 0 {
		declared := map[string]bool{}
		for _, b := range cfg.Quota.Buckets {
			declared[b.Name] = true
		}
		for m, per := range cfg.Quota.Costs {
			for b := range per {
				if !declared[b] {
					delete(cfg.Quota.Costs, m)
					break
				}
			}
		}
	}
	// Policies given in the file override per method; methods with a cost
	// but no policy keep their default.
	if cfg.Quota.Policies == nil {
		cfg.Quota.Policies = map[string]Policy{}
	}
	for m, p := range defaultPolicies {
		if _, has := cfg.Quota.Costs[m]; has {
			if _, set := cfg.Quota.Policies[m]; !set {
				cfg.Quota.Policies[m] = p
			}
		}
	}
	return cfg, nil
}

func oneLine(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	return strings.Join(strings.Fields(s), " ")
}

// Load reads the config file at path (or, when path is "", the file named
// by TRENDFETCH_CONFIG, or DefaultPath() if it exists, or nothing), applies
// environment overrides, then override (command-line flags; may be nil),
// then Complete: defaults are filled in one step, after every source. A path
// given explicitly must exist. It returns the config and the absolute path
// of the file it read ("" when it ran on defaults). Errors name the file;
// the caller runs Validate.
func Load(path string, override func(*Config)) (*Config, string, error) {
	explicit := path != ""
	if !explicit {
		if p := os.Getenv("TRENDFETCH_CONFIG"); p != "" {
			path, explicit = p, true
		} else {
			path = DefaultPath()
		}
	}
	cfg := defaults()
	used := ""
	if path != "" {
		// Stat before opening: opening a FIFO blocks until a writer comes.
		fi, err := os.Stat(path)
		var f *os.File
		if err == nil {
			switch {
			case fi.IsDir():
				return nil, "", fmt.Errorf("config %s is a directory, want a YAML file", path)
			case !fi.Mode().IsRegular():
				return nil, "", fmt.Errorf("config %s is not a regular file (%s), want a YAML file", path, fi.Mode().Type())
			case fi.Size() > MaxConfigBytes:
				return nil, "", fmt.Errorf("config %s is %d MB, larger than %d KiB: a trendfetch config is a few KB; check the path", path, fi.Size()>>20, MaxConfigBytes>>10)
			}
			f, err = os.Open(path)
		}
		switch {
		case err == nil:
			cfg, err = parse(f)
			f.Close()
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", path, err)
			}
			if used, err = filepath.Abs(path); err != nil {
				return nil, "", fmt.Errorf("config %s: %w", path, err)
			}
		case errors.Is(err, os.ErrNotExist) && !explicit:
			// no config file: defaults
		default:
			return nil, "", fmt.Errorf("cannot open config: %w", err)
		}
	}
	if err := cfg.applyEnv(os.LookupEnv); err != nil {
		return nil, "", err
	}
	if override != nil {
		override(cfg)
	}
	cfg.Complete()
	return cfg, used, nil
}

// secretsHint ends the error for a secret written into the YAML file.
const secretsHint = " (secrets are read only from the environment or a key file: use api_key_env / api_key_file, TRENDFETCH_REDIS_URL / url_file, TRENDFETCH_REDIS_SENTINEL_PASSWORD / sentinel.password_file)"

// ApplyEnv applies environment overrides, looked up with lookup (os.LookupEnv
// in production): TRENDFETCH_DATABASE, TRENDFETCH_REGIONS (comma-separated),
// TRENDFETCH_CREDENTIAL, TRENDFETCH_API_ENDPOINT, TRENDFETCH_QUOTA_BACKEND,
// TRENDFETCH_QUOTA_DB, TRENDFETCH_REDIS_URL (may hold a password; else
// quota.redis.url_file is read), TRENDFETCH_REDIS_SENTINEL_PASSWORD (else
// quota.redis.sentinel.password_file is read), TRENDFETCH_LOG_LEVEL,
// TRENDFETCH_LOG_FORMAT; then Complete.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	if err := c.applyEnv(lookup); err != nil {
		return err
	}
	c.Complete()
	return nil
}

// applyEnv is ApplyEnv without Complete.
func (c *Config) applyEnv(lookup func(string) (string, bool)) error {
	set := func(name string, dst *string) {
		if v, ok := lookup(name); ok && v != "" {
			*dst = v
		}
	}
	set("TRENDFETCH_DATABASE", &c.Database)
	set("TRENDFETCH_CREDENTIAL", &c.Credential)
	set("TRENDFETCH_API_ENDPOINT", &c.API.Endpoint)
	set("TRENDFETCH_QUOTA_BACKEND", &c.Quota.Backend)
	set("TRENDFETCH_QUOTA_DB", &c.Quota.SQLite.Path)
	set("TRENDFETCH_REDIS_URL", &c.Quota.Redis.URL)
	set("TRENDFETCH_REDIS_SENTINEL_PASSWORD", &c.Quota.Redis.Sentinel.Password)
	set("TRENDFETCH_LOG_LEVEL", &c.Log.Level)
	set("TRENDFETCH_LOG_FORMAT", &c.Log.Format)
	if v, ok := lookup("TRENDFETCH_REGIONS"); ok && v != "" {
		c.Regions = strings.Split(v, ",")
	}
	if c.Quota.Redis.URL == "" && c.Quota.Redis.URLFile != "" {
		u, err := readSecretFile(c.Quota.Redis.URLFile)
		if err != nil {
			return invalid("quota.redis.url_file", c.Quota.Redis.URLFile, "%s", err.Error())
		}
		c.Quota.Redis.URL = u
	}
	if path, ok := systemdCredential(lookup, RedisURLCredential); ok && c.Quota.Redis.URL == "" {
		u, err := readSecretFile(path)
		if err != nil {
			return invalid("systemd credential "+RedisURLCredential, path, "%s", err.Error())
		}
		c.Quota.Redis.URL = u
	}
	if path, ok := systemdCredential(lookup, SentinelPasswordCredential); ok && c.Quota.Redis.Sentinel.Password == "" && c.Quota.Redis.Sentinel.PasswordFile == "" {
		pw, err := readSecretFile(path)
		if err != nil {
			return invalid("systemd credential "+SentinelPasswordCredential, path, "%s", err.Error())
		}
		c.Quota.Redis.Sentinel.Password = pw
	}
	if s := &c.Quota.Redis.Sentinel; s.Password == "" && s.PasswordFile != "" {
		pw, err := readSecretFile(s.PasswordFile)
		if err != nil {
			return invalid("quota.redis.sentinel.password_file", s.PasswordFile, "%s", err.Error())
		}
		s.Password = pw
	}
	return nil
}

// ValidationError names the config field, the offending value and why it
// is wrong.
type ValidationError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("config: %s = %s: %s", e.Field, Truncate(fmt.Sprint(e.Value), 200), e.Reason)
}

func invalid(field string, value any, format string, args ...any) error {
	return &ValidationError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Complete fills in every default that depends on other settings and
// normalizes values, in one step before Validate: a credential without a
// key source reads YOUTUBE_API_KEY, region codes are upper-cased and
// de-duplicated (when valid; Validate reports invalid ones), api.endpoint
// ends in "/", the quota backend is redis when Redis is configured and
// sqlite otherwise, quota.sqlite.path defaults to quota.db beside the
// database, searches default to one page, and the schedule's defaults are
// filled (see Schedule). It is idempotent and never fails.
func (c *Config) Complete() {
	for i, cr := range c.Credentials {
		if cr.KeyEnv == "" && cr.KeyFile == "" {
			c.Credentials[i].KeyEnv = "YOUTUBE_API_KEY"
		}
	}
	if rs, err := regions.ParseList(c.Regions); err == nil {
		c.Regions = rs
	}
	if c.API.Endpoint != "" && !strings.HasSuffix(c.API.Endpoint, "/") {
		c.API.Endpoint += "/"
	}
	// Values derived here are derived again when a later source changed
	// what they derive from (e.g. Default, then ApplyEnv setting a Redis URL).
	if c.Quota.Backend == "" || c.Quota.Backend == c.derived.backend {
		c.Quota.Backend = "sqlite"
		if c.Quota.Redis.Configured() {
			c.Quota.Backend = "redis"
		}
		c.derived.backend = c.Quota.Backend
	}
	if (c.Quota.SQLite.Path == "" || c.Quota.SQLite.Path == c.derived.quotaDB) && c.Database != "" {
		c.Quota.SQLite.Path = filepath.Join(filepath.Dir(c.Database), "quota.db")
		c.derived.quotaDB = c.Quota.SQLite.Path
	}
	c.completeIngest()
	c.Schedule.complete()
	c.Serve.complete()
}

// Validate checks the whole configuration without I/O and without changing
// it (run Complete first; Load, Parse, ApplyEnv and Default do). It returns
// the first problem as a *ValidationError or *regions.Error.
func (c *Config) Validate() error {
	if c.Database == "" {
		return invalid("database", `""`, "no data directory: HOME and XDG_DATA_HOME are unset; set database in the config (or --database, TRENDFETCH_DATABASE), or set HOME")
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
		names[cr.Name] = true
	}
	if !names[c.Credential] {
		return invalid("credential", c.Credential, "no credential of that name (have %s)", strings.Join(sortedKeys(names), ", "))
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
	if c.API.PageSize < 1 || c.API.PageSize > 50 {
		return invalid("api.page_size", c.API.PageSize, "must be 1-50 (the API's maxResults range)")
	}
	switch c.Quota.Backend {
	case "sqlite":
	case "redis":
		if !c.Quota.Redis.Configured() {
			return invalid("quota.backend", "redis", "no Redis configured: set TRENDFETCH_REDIS_URL, quota.redis.url_file, quota.redis.cluster or quota.redis.sentinel")
		}
	default:
		return invalid("quota.backend", c.Quota.Backend, "want sqlite or redis")
	}
	if err := c.Quota.Redis.validate(c.Quota.Backend); err != nil {
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
		if p != FailOpen && p != FailClosed {
			return invalid("quota.policies."+m, p, "want fail-open or fail-closed")
		}
	}
	switch c.Log.Level {
	case "trace", "debug", "info", "warn", "error":
	default:
		return invalid("log.level", c.Log.Level, "want trace, debug, info, warn or error")
	}
	switch c.Log.Format {
	case "auto", "json", "console":
	default:
		return invalid("log.format", c.Log.Format, "want auto, json or console")
	}
	if err := c.Serve.validate(); err != nil {
		return err
	}
	return c.Schedule.validate(c.Regions)
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

// Limits converts the buckets and the cost table into the quota package's
// types. The buckets and costs themselves are checked by quota.New (their
// one home), whose *quota.SettingError and *quota.CostError become a
// *ValidationError naming the quota.* setting; what is left here is what
// only the file can get wrong: a name's characters, the algorithm, a
// window under 1ms, a method charging nothing.
func (c *Config) Limits() ([]quota.Bucket, quota.Costs, error) {
	if len(c.Quota.Buckets) == 0 {
		return nil, nil, invalid("quota.buckets", "[]", "at least one bucket is needed")
	}
	buckets := make([]quota.Bucket, 0, len(c.Quota.Buckets))
	for i, b := range c.Quota.Buckets {
		f := fmt.Sprintf("quota.buckets[%d]", i)
		if !validName(b.Name) {
			return nil, nil, invalid(f+".name", fmt.Sprintf("%q", b.Name), "want 1-64 characters of A-Z a-z 0-9 . _ -")
		}
		switch b.Algorithm {
		case "", "log":
		case "counter":
			return nil, nil, invalid(f+".algorithm", b.Algorithm, "quota buckets are exact sliding-window logs; the approximate counter is for serve.rate_limit")
		default:
			return nil, nil, invalid(f+".algorithm", b.Algorithm, "want log (quota buckets are exact sliding-window logs)")
		}
		if !b.Calendar && time.Duration(b.Window) < time.Millisecond {
			return nil, nil, invalid(f+".window", time.Duration(b.Window), "must be at least 1ms (or set calendar: true)")
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
		return nil, nil, invalid("quota."+se.Setting, se.Value, "%s", se.Reason)
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
func (c *Config) Policy(method string) Policy {
	if p, ok := c.Quota.Policies[method]; ok {
		return p
	}
	if site, ok := callsite.Lookup(method); ok {
		return site.Policy
	}
	return FailOpen
}

// FindCredential returns the credential named name.
func (c *Config) FindCredential(name string) (Credential, error) {
	for _, cr := range c.Credentials {
		if cr.Name == name {
			return cr, nil
		}
	}
	return Credential{}, invalid("credential", name, "no credential of that name")
}

// ErrNoAPIKey is returned by APIKey when neither the env variable nor the key
// file gives a key.
var ErrNoAPIKey = errors.New("no API key")

// APIKey returns the credential's API key from its env variable, else its
// key file. Errors name the variable or file, never a key's content.
func (cr Credential) APIKey(lookup func(string) (string, bool)) (string, error) {
	if cr.KeyEnv != "" {
		if v, ok := lookup(cr.KeyEnv); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	if cr.KeyFile != "" {
		k, err := readSecretFile(cr.KeyFile)
		if err != nil {
			return "", invalid(fmt.Sprintf("credentials[%s].api_key_file", cr.Name), cr.KeyFile, "%s", err.Error())
		}
		if k != "" {
			return k, nil
		}
	}
	name := cmp.Or(cr.KeyCredential, KeyCredentialPrefix+cr.Name)
	if path, ok := systemdCredential(lookup, name); ok {
		k, err := readSecretFile(path)
		if err != nil {
			return "", invalid(fmt.Sprintf("credentials[%s].api_key_credential", cr.Name), path, "%s", err.Error())
		}
		if k != "" {
			return k, nil
		}
	}
	where := "$" + cr.KeyEnv
	if cr.KeyFile != "" {
		where += " or " + cr.KeyFile
	}
	where += " or the systemd credential " + name
	return "", fmt.Errorf("credential %q: %w: set %s", cr.Name, ErrNoAPIKey, where)
}

// SecretFiles returns the files of c that hold secrets: every credential's
// api_key_file, quota.redis.url_file and quota.redis.sentinel.password_file.
func (c *Config) SecretFiles() []string {
	var out []string
	for _, cr := range c.Credentials {
		if cr.KeyFile != "" {
			out = append(out, cr.KeyFile)
		}
	}
	if c.Quota.Redis.URLFile != "" {
		out = append(out, c.Quota.Redis.URLFile)
	}
	if c.Quota.Redis.Sentinel.PasswordFile != "" {
		out = append(out, c.Quota.Redis.Sentinel.PasswordFile)
	}
	return out
}

// ExposedToOthers reports whether path is a regular file that can be read or written by
// its group or by other users (mode & 0o077 != 0): a secret in it is exposed.
func ExposedToOthers(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0
}

// MaxConfigBytes bounds a config file (1 MiB); MaxSecretFileBytes bounds a
// key or URL file (64 KiB): larger files are refused, not read whole.
const (
	MaxConfigBytes     = 1 << 20
	MaxSecretFileBytes = 64 << 10
)

// readSecretFile returns the first line of path, trimmed. Errors never
// include the content; they say what to do.
func readSecretFile(path string) (string, error) {
	// Stat first: reading a FIFO would block until a writer comes.
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("not a regular file (%s): write the secret alone on the first line of a regular file, chmod 600", fi.Mode().Type())
	case fi.Size() > MaxSecretFileBytes:
		return "", fmt.Errorf("%d bytes, larger than %d KiB: a secret file holds one line; check the path", fi.Size(), MaxSecretFileBytes>>10)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes))
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line), nil
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

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
