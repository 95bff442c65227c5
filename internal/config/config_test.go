package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/regions"
)

func noEnv(string) (string, bool) { return "", false }

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
	if len(buckets) != 2 || buckets[0].Name != "units" || buckets[0].Limit != 9500 || buckets[0].Window != 24*time.Hour {
		t.Errorf("buckets = %+v", buckets)
	}
	if got := costs["search.list"]; len(got) != 2 || got[0].Bucket != "search" || got[0].Units != 1 || got[1].Bucket != "units" || got[1].Units != 100 {
		t.Errorf("search.list costs = %+v", got)
	}
	if c.Policy("search.list") != FailClosed || c.Policy("videos.list") != FailOpen {
		t.Errorf("default policies wrong: %v", c.Quota.Policies)
	}
}

func TestParseOverridesAndKeepsDefaults(t *testing.T) {
	c, err := Parse(strings.NewReader(`
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
	if c.Policy("videos.list") != FailClosed {
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
		{"unknown key", "databse: x", "field databse not found"},
		{"secret in yaml", "credentials:\n  - name: p\n    api_key: AIzaXYZ", "secrets are read only from the environment"},
		{"bad duration", "api: {timeout: soon}", `bad duration "soon"`},
		{"not yaml", "{[", "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml))
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
	c.Regions = []string{"UK"}
	var re *regions.Error
	if err := c.Validate(); !errors.As(err, &re) || !strings.Contains(err.Error(), "did you mean GB?") {
		t.Errorf("region UK: err = %v", err)
	}
}

func TestEnvAndKeyFile(t *testing.T) {
	env := map[string]string{"TRENDFETCH_REDIS_URL": "redis://:pw@127.0.0.1:1/0", "TRENDFETCH_REGIONS": "jp,kr", "MY_KEY": " k1 "}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c := Default()
	if err := c.ApplyEnv(lookup); err != nil {
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
	if _, err := Load(""); err != nil {
		t.Fatalf("no config file at the XDG default must mean defaults: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("an explicit missing config must be an error")
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory config: err = %v", err)
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
	c, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Database != "/var/lib/trendfetch/trendfetch.db" || len(c.Quota.Buckets) != 2 || len(c.Quota.Costs) != 4 || len(c.Quota.Policies) != 4 {
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
	if !ExposedToOthers(open) || ExposedToOthers(closed) || ExposedToOthers(filepath.Join(dir, "none")) {
		t.Error("ExposedToOthers: want true only for the 0644 file")
	}
	c := Default()
	c.Credentials[0].KeyFile = open
	c.Quota.Redis.URLFile = closed
	if got := c.SecretFiles(); len(got) != 2 || got[0] != open || got[1] != closed {
		t.Errorf("SecretFiles = %v", got)
	}
}
