package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/secret"
)

func noEnv(string) (string, bool) { return "", false }

// parse reads r as Load reads a config file, with no environment and no
// flags.
func parse(r io.Reader) (*Config, error) { return read(r, noEnv, nil) }

// envOf is a lookup of the variables vars.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestDefaultValidates(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Quota.Backend != "sqlite" {
		t.Errorf("backend = %q, want sqlite when no Redis is configured", c.Quota.Backend)
	}
	buckets, costs, err := c.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if len(buckets) != 3 || buckets[0].Name != "units" || buckets[2].Name != "stats" || buckets[2].Limit != 9500 || buckets[0].Limit != 9500 || buckets[0].Window != 24*time.Hour {
		t.Errorf("buckets = %+v", buckets)
	}
	if got := costs["search.list"]; len(got) != 2 || got[0].Bucket != "search" || got[0].Units != 1 || got[1].Bucket != "units" || got[1].Units != 100 {
		t.Errorf("search.list costs = %+v", got)
	}
	if got := costs["videos.batchGetStats"]; len(got) != 1 || got[0].Bucket != "stats" || got[0].Units != 1 {
		t.Errorf("videos.batchGetStats costs = %+v", got)
	}
	if c.Policy("search.list") != callsite.FailClosed || c.Policy("videos.list") != callsite.FailOpen || c.Policy("videos.batchGetStats") != callsite.FailOpen {
		t.Errorf("default policies wrong: %v", c.Quota.Policies)
	}
}

func TestParseOverridesAndKeepsDefaults(t *testing.T) {
	c, err := parse(strings.NewReader(`
database: /tmp/x.db
regions: [us, gb, US]
api:
  endpoint: http://127.0.0.1:9/
quota:
  buckets:
    - {name: units, limit: 2, window: 10s}
  costs:
    videos.list: {units: 1}
  policies:
    videos.list: fail-closed
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Regions, ","); got != "US,GB" {
		t.Errorf("regions = %s", got)
	}
	if c.Policy("videos.list") != callsite.FailClosed {
		t.Error("policy override lost")
	}
	if _, ok := c.Quota.Policies["search.list"]; ok {
		t.Error("default policy kept for a method with no cost")
	}
	if c.Quota.SQLite.Path != "/tmp/quota.db" {
		t.Errorf("quota db = %s", c.Quota.SQLite.Path)
	}
	if c.Credential != "default" || len(c.Credentials) != 1 {
		t.Errorf("credentials = %+v", c.Credentials)
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "databse: x", `unknown key databse: did you mean "database"?`},
		{"unknown nested key", "api:\n  page_sise: 5", `line 2: unknown key api.page_sise: did you mean "page_size"?`},
		{"unknown key far from any", "quota:\n  zzzzzzzz: 1", "unknown key quota.zzzzzzzz (valid under quota: backend, buckets, costs, headroom, policies, preset, redis, reserve, reserve_for, sqlite)"},
		{"secret in yaml", "credentials:\n  - name: p\n    api_key: AIzaXYZ", "secrets are read only from the environment"},
		{"bad duration", "api: {timeout: soon}", `api.timeout: want a duration such as 90s, 30m or 24h (got "soon")`},
		{"bad stagger", "schedule: {stagger: 3}", `schedule.stagger: want a duration`},
		{"number wanted", "api: {page_size: abc}", `api.page_size: want a whole number (got "abc")`},
		{"list wanted", "regions: US", "regions: want a list"},
		{"mapping wanted", "log: [1]", "log: want a mapping"},
		{"bool wanted", "channels: {enabled: yes please}", "channels.enabled: want true or false"},
		{"not yaml", "{[", "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(strings.NewReader(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "AIzaXYZ") {
				t.Fatalf("error leaks the key: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestValidateNamesFieldValueReason(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"negative limit", func(c *Config) { c.Quota.Buckets[0].Limit = -1 }, "quota.buckets[0].limit"},
		{"reserved bucket name", func(c *Config) { c.Quota.Buckets[1].Name = "state" }, "quota.buckets[1].name"},
		{"cost over limit", func(c *Config) { c.Quota.Buckets[1].Limit = 50; c.Quota.Buckets[0].Limit = 50 }, "quota.costs.search.list.units"},
		{"unknown bucket", func(c *Config) { c.Quota.Costs["videos.list"] = map[string]int64{"nope": 1} }, "quota.costs.videos.list.nope"},
		{"bad policy", func(c *Config) { c.Quota.Policies["videos.list"] = "maybe" }, "quota.policies.videos.list"},
		{"page size", func(c *Config) { c.API.PageSize = 51 }, "api.page_size"},
		{"lease ttl too short", func(c *Config) { c.Runs.LeaseTTL = Duration(100 * time.Millisecond) }, "runs.lease_ttl"},
		{"lease ttl too long", func(c *Config) { c.Runs.LeaseTTL = Duration(25 * time.Hour) }, "runs.lease_ttl"},
		{"endpoint", func(c *Config) { c.API.Endpoint = "ftp://x" }, "api.endpoint"},
		{"backend", func(c *Config) { c.Quota.Backend = "etcd" }, "quota.backend"},
		{"redis without url", func(c *Config) { c.Quota.Backend = "redis" }, "quota.backend"},
		{"credential", func(c *Config) { c.Credential = "other" }, "credential"},
		{"credential name", func(c *Config) { c.Credentials[0].Name = "a b" }, "credentials[0].name"},
		{"key credential breaking a unit", func(c *Config) { c.Credentials[0].KeyCredential = "k\nExecStartPre=/bin/sh" }, "credentials[0].api_key_credential"},
		{"unknown call site", func(c *Config) { c.Quota.Costs["search.lst"] = map[string]int64{"search": 1} }, "quota.costs.search.lst"},
		{"unknown policy call site", func(c *Config) { c.Quota.Policies["video.list"] = callsite.FailOpen }, "quota.policies.video.list"},
		{"chart without cost", func(c *Config) { delete(c.Quota.Costs, "videos.list") }, "quota.costs"},
		{"categories without cost", func(c *Config) { c.Categories.Enabled = true; delete(c.Quota.Costs, "videoCategories.list") }, "quota.costs"},
		{"no data directory", func(c *Config) { c.Database = "" }, "database"},
		// One bound of each section, reached through its validate.
		{"api timeout", func(c *Config) { c.API.Timeout = 0 }, "api.timeout"},
		{"api retry backoff", func(c *Config) { c.API.RetryBackoff = -1 }, "api.retry_backoff"},
		{"api retries", func(c *Config) { c.API.Retries = 11 }, "api.retries"},
		{"runs timeout", func(c *Config) { c.Runs.Timeout = -1 }, "runs.timeout"},
		{"checkin url", func(c *Config) { c.Runs.CheckinURL = "ftp://x" }, "TRENDFETCH_CHECKIN_URL (or runs.checkin_url_file)"},
		{"stats track_for", func(c *Config) { c.Stats.TrackFor = -1 }, "stats.track_for"},
		{"stats every", func(c *Config) { c.Stats.Every = -1 }, "stats.every"},
		{"store retention", func(c *Config) { c.Store.Retention = -1 }, "store.retention"},
		{"store refresh", func(c *Config) { c.Store.RefreshPerDay = -1 }, "store.refresh_per_day"},
		{"log level", func(c *Config) { c.Log.Level = "loud" }, "log.level"},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, "log.format"},
		{"chart category", func(c *Config) { c.Chart.Categories = map[string][]string{"US": {"12345"}} }, "chart.categories.US"},
		{"search pages", func(c *Config) { c.Searches = []Search{{Q: "x", MaxPages: 11}} }, "searches[0].max_pages"},
		{"channels refresh", func(c *Config) { c.Channels = Refresh{Enabled: true} }, "channels.refresh"},
		{"serve algorithm", func(c *Config) { c.Serve.RateLimit.Algorithm = "leaky" }, "serve.rate_limit.algorithm"},
		{"sentinel without master", func(c *Config) { c.Quota.Redis.Sentinel.Addrs = []string{"h:26379"} }, "quota.redis.sentinel.master"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(c)
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			if ve.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", ve.Field, tc.field, err)
			}
		})
	}
	c := Default()
	c.Quota.Costs["search.lst"] = map[string]int64{"search": 1}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "did you mean search.list?") {
		t.Errorf("search.lst: err = %v, want a did-you-mean", err)
	}
	c = Default()
	c.Regions = []string{"UK"}
	var re *regions.Error
	if err := c.Validate(); !errors.As(err, &re) || !strings.Contains(err.Error(), "did you mean GB?") {
		t.Errorf("region UK: err = %v", err)
	}
}

func TestEnvAndKeyFile(t *testing.T) {
	env := map[string]string{"TRENDFETCH_REDIS_URL": "redis://:pw@127.0.0.1:1/0", "TRENDFETCH_REGIONS": "jp,kr", "MY_KEY": " k1 "}
	lookup := envOf(env)
	c, err := read(nil, lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Quota.Backend != "redis" || strings.Join(c.Regions, ",") != "JP,KR" {
		t.Errorf("backend %q regions %v", c.Quota.Backend, c.Regions)
	}
	key, err := Credential{Name: "p", KeyEnv: "MY_KEY"}.APIKey(lookup)
	if err != nil || key != "k1" {
		t.Errorf("APIKey = %q, %v", key, err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("k2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err = Credential{Name: "p", KeyEnv: "UNSET", KeyFile: file}.APIKey(lookup)
	if err != nil || key != "k2" {
		t.Errorf("APIKey from file = %q, %v", key, err)
	}
	_, err = Credential{Name: "p", KeyEnv: "UNSET"}.APIKey(noEnv)
	if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "$UNSET") {
		t.Errorf("missing key err = %v", err)
	}
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TRENDFETCH_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", dir)
	load := func(env map[string]string, flags map[string]string) (*Config, string, error) {
		return Load(envOf(env), flags)
	}
	if _, used, err := load(nil, nil); err != nil || used != "" {
		t.Fatalf("no config file at the XDG default must mean defaults: used %q, %v", used, err)
	}
	if _, _, err := load(map[string]string{"TRENDFETCH_CONFIG": filepath.Join(dir, "missing.yaml")}, nil); err == nil {
		t.Error("an explicit missing config must be an error")
	}
	if _, _, err := load(nil, map[string]string{"config": dir}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory config: err = %v", err)
	}
	// The default path, when it exists, is the path used.
	def := filepath.Join(dir, "trendfetch", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("database: /tmp/file.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, used, err := load(nil, nil)
	if err != nil || used != def {
		t.Fatalf("Load = %q, %v; want the default path %s", used, err, def)
	}
	// Defaults derived from other settings are filled after every source:
	// a database given by a flag (override) moves quota.db with it.
	cfg, _, err := load(map[string]string{"TRENDFETCH_DATABASE": "/tmp/env/t.db"}, map[string]string{"database": "/tmp/flag/t.db"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quota.SQLite.Path != "/tmp/flag/quota.db" {
		t.Errorf("quota.sqlite.path = %s, want /tmp/flag/quota.db (beside the final database)", cfg.Quota.SQLite.Path)
	}
}

// TestValidateDoesNotChangeTheConfig: Validate only reports; Complete is the
// one step that fills defaults.
func TestValidateDoesNotChangeTheConfig(t *testing.T) {
	c := defaults()
	c.Regions = []string{"us", "gb", "US"}
	c.Searches = []Search{{Q: "x"}}
	before := fmt.Sprintf("%+v", *c)
	_ = c.Validate()
	if after := fmt.Sprintf("%+v", *c); after != before {
		t.Errorf("Validate changed the config:\nbefore %s\nafter  %s", before, after)
	}
	c.complete()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Regions, ",") != "US,GB" || c.Searches[0].MaxPages != 1 || c.Quota.Backend != "sqlite" || c.Schedule.Concurrency == 0 {
		t.Errorf("Complete did not fill defaults: regions %v max_pages %d backend %q concurrency %d",
			c.Regions, c.Searches[0].MaxPages, c.Quota.Backend, c.Schedule.Concurrency)
	}
	again := fmt.Sprintf("%+v", *c)
	c.complete()
	if fmt.Sprintf("%+v", *c) != again {
		t.Error("Complete is not idempotent")
	}
}

// TestExampleConfig keeps configs/trendfetch.example.yaml valid: it must parse
// with unknown keys rejected and pass Validate.
func TestExampleConfig(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "configs", "trendfetch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Database != "/var/lib/trendfetch/trendfetch.db" || len(c.Quota.Buckets) != 3 || len(c.Quota.Costs) != len(callsite.Names()) || len(c.Quota.Policies) != len(callsite.Names()) || c.Stats.TrackFor.Std() != 168*time.Hour {
		t.Errorf("example parsed to %+v", c)
	}
}

func TestExposedSecretFiles(t *testing.T) {
	dir := t.TempDir()
	open, closed := filepath.Join(dir, "open"), filepath.Join(dir, "closed")
	if err := os.WriteFile(open, []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(closed, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !secret.Exposed(open) || secret.Exposed(closed) || secret.Exposed(filepath.Join(dir, "none")) {
		t.Error("secret.Exposed: want true only for the 0644 file")
	}
	c := Default()
	c.Credentials[0].KeyFile = open
	c.Quota.Redis.URLFile = closed
	if got := c.SecretFiles(); len(got) != 2 || got[0] != open || got[1] != closed {
		t.Errorf("SecretFiles = %v", got)
	}
}

// TestBucketsMergeWithTheDefaults (issue 31 item 14): the file's
// quota.buckets are merged with the preset's by name, so overriding one
// keeps the others (and the call sites charging them); removing one is
// explicit; every error names the key the file wrote.
func TestBucketsMergeWithTheDefaults(t *testing.T) {
	c, err := parse(strings.NewReader("quota:\n  buckets:\n    - {name: units, limit: 5000, window: 24h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Quota.Buckets.names(), ","); got != "units,search,stats" || c.Quota.Buckets[0].Limit != 5000 {
		t.Errorf("buckets = %+v, want units (5000), search, stats", c.Quota.Buckets)
	}
	if _, ok := c.Quota.Costs["videos.batchGetStats"]; !ok {
		t.Errorf("overriding units turned batchGetStats off: costs %v", c.Quota.Costs)
	}

	// Removing a bucket is explicit, and takes the call sites charging it.
	c, err = parse(strings.NewReader("quota:\n  buckets:\n    - name: stats\n      remove: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Quota.Costs["videos.batchGetStats"]; ok || len(c.Quota.Buckets) != 2 {
		t.Errorf("remove stats: buckets %v, costs %v", c.Quota.Buckets.names(), c.Quota.Costs)
	}

	// Each error names the key the file wrote.
	for _, tc := range []struct{ yaml, want string }{
		// stats is the third bucket, but the file's first entry.
		{"quota:\n  buckets:\n    - {name: stats, limit: -1, window: 24h}\n", "quota.buckets[0].limit"},
		{"quota:\n  buckets:\n    - {name: units, limit: 9, window: 24h}\n    - {name: stats, limit: 9, window: 1us}\n", "quota.buckets[1].window"},
		{"quota:\n  buckets:\n    - {name: units, limit: 9, window: 24h}\n    - {name: units, limit: 8, window: 24h}\n", "line 4: quota.buckets[1].name units: given twice"},
		{"quota:\n  buckets:\n    - {name: statz, remove: true}\n", `quota.buckets[0]: remove: true, but there is no bucket "statz"`},
		// searches need search.list, whose cost went with the bucket search.
		{"searches: [{q: x}]\nquota:\n  buckets:\n    - {name: search, remove: true}\n", "quota.buckets removes bucket search"},
	} {
		c, err := parse(strings.NewReader(tc.yaml))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "config: quota.costs") {
			t.Errorf("%q: err = %v, want it to name %s (and not quota.costs, never written)", tc.yaml, err, tc.want)
		}
	}
}

// TestAmendedNeedsRefreshCost: store.policy amended refreshes old text with
// videos.list.refresh, so a cost table without it is refused with the key
// to add, unless store.refresh_per_day is 0 (never refresh).
func TestAmendedNeedsRefreshCost(t *testing.T) {
	const costs = "quota:\n  costs:\n    videos.list: {units: 1}\n"
	for _, c := range []struct {
		yaml string
		ok   bool
	}{
		{"store:\n  policy: amended\n" + costs, false},
		{"store:\n  policy: amended\n  refresh_per_day: 0\n" + costs, true},
		{"store:\n  policy: youtube\n" + costs, true},
		{"store:\n  policy: amended\n", true},
	} {
		cfg, err := parse(strings.NewReader(c.yaml))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if c.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "quota.costs.videos.list.refresh") {
			t.Errorf("%q: %v", c.yaml, err)
		}
	}
}

// TestEnabledCallSitesNeedACost: a call site the configuration enables
// (the call-site rows say which) must have a cost: searches, even scoped to
// one region, need search.list; videos.batchGetStats may go without (the
// statistics step is then off).
func TestEnabledCallSitesNeedACost(t *testing.T) {
	const costs = "quota:\n  costs:\n    videos.list: {units: 1}\n"
	for yaml, want := range map[string]string{
		"searches: [{q: x, regions: [GB]}]\n" + costs: "quota.costs.search.list",
		"searches: [{q: x}]\n" + costs:                "quota.costs.search.list",
		"channels: {enabled: true}\n" + costs:         "quota.costs.channels.list",
		"stats: {track_for: 24h}\n" + costs:           "",
	} {
		cfg, err := parse(strings.NewReader(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
