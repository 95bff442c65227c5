package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// quota.redis.sentinel, wait_replicas and wait_timeout (issue 13).

func TestRedisSentinelAndWaitParse(t *testing.T) {
	const yaml = `
quota:
  redis:
    sentinel:
      master: mymaster
      addrs: [10.0.0.1:26379, "redis-sentinel-2.internal:26379", "[::1]:26379"]
    wait_replicas: 1
    wait_timeout: 250ms
`
	c, err := parse(strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := c.Quota.Redis
	if c.Quota.Backend != "redis" {
		t.Errorf("backend = %q, want redis when only quota.redis.sentinel is set (no URL: no password)", c.Quota.Backend)
	}
	if r.Sentinel.Master != "mymaster" || len(r.Sentinel.Addrs) != 3 || r.WaitReplicas != 1 || r.WaitTimeout.Std() != 250*time.Millisecond {
		t.Errorf("quota.redis = %+v", r)
	}

	d := Default()
	if d.Quota.Redis.WaitReplicas != 0 || d.Quota.Redis.WaitTimeout.Std() != quota.DefaultRedisWaitTimeout {
		t.Errorf("defaults: wait_replicas %d, wait_timeout %s; want 0 and %s", d.Quota.Redis.WaitReplicas, d.Quota.Redis.WaitTimeout.Std(), quota.DefaultRedisWaitTimeout)
	}
	// The URL of the environment still gives the password with Sentinel.
	c, err = read(strings.NewReader(yaml), envOf(map[string]string{"TRENDFETCH_REDIS_URL": "redis://:pw@ignored:1/2"}), nil)
	if err != nil || c.Quota.Redis.URL == "" || c.Validate() != nil {
		t.Errorf("sentinel with TRENDFETCH_REDIS_URL: %v %v", err, c.Validate())
	}
}

// TestRedisSentinelPassword: the Sentinels' password comes from
// TRENDFETCH_REDIS_SENTINEL_PASSWORD, else from sentinel.password_file
// (trimmed), never from YAML; the file counts as a secret file, and a
// missing one is a one-line error naming the setting.
func TestRedisSentinelPassword(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "sentinel-pw")
	if err := os.WriteFile(pwFile, []byte("from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := "quota:\n  redis:\n    sentinel:\n      master: m\n      addrs: [127.0.0.1:26379]\n      username: ops\n      password_file: " + pwFile + "\n"
	c, err := parse(strings.NewReader(yaml))
	if err != nil || c.Quota.Redis.Sentinel.Password != "from-the-file" || c.Quota.Redis.Sentinel.Username != "ops" || c.Validate() != nil {
		t.Fatalf("password_file: %v %+v %v", err, c.Quota.Redis.Sentinel, c.Validate())
	}
	if !slices.Contains(c.SecretFiles(), pwFile) {
		t.Errorf("SecretFiles() = %v, want the password file", c.SecretFiles())
	}
	c, err = read(strings.NewReader(yaml), envOf(map[string]string{"TRENDFETCH_REDIS_SENTINEL_PASSWORD": "from-env"}), nil)
	if err != nil || c.Quota.Redis.Sentinel.Password != "from-env" {
		t.Fatalf("env over file: %v %+v", err, c.Quota.Redis.Sentinel)
	}
	_, err = parse(strings.NewReader(strings.Replace(yaml, pwFile, pwFile+".missing", 1)))
	if err == nil || !strings.Contains(err.Error(), "quota.redis.sentinel.password_file") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("missing password file: %v", err)
	}
	_, err = parse(strings.NewReader("quota:\n  redis:\n    sentinel:\n      master: m\n      addrs: [127.0.0.1:26379]\n      password: in-yaml\n"))
	if err == nil || !strings.Contains(err.Error(), "TRENDFETCH_REDIS_SENTINEL_PASSWORD") || strings.Contains(err.Error(), "in-yaml") {
		t.Fatalf("password in YAML: %v", err)
	}
}

func TestRedisSentinelAndWaitValidate(t *testing.T) {
	sentinel := func(master string, addrs ...string) func(*Config) {
		return func(c *Config) { c.Quota.Redis.Sentinel = RedisSentinel{Master: master, Addrs: addrs} }
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
		want  string
	}{
		{"addrs without master", sentinel("", "127.0.0.1:26379"), "quota.redis.sentinel.master", "required with quota.redis.sentinel.addrs"},
		{"master without addrs", sentinel("mymaster"), "quota.redis.sentinel.addrs", "at least one Sentinel host:port"},
		{"addr without port", sentinel("m", "127.0.0.1"), "quota.redis.sentinel.addrs[0]", "want host:port"},
		{"addr without host", sentinel("m", "127.0.0.1:26379", ":26379"), "quota.redis.sentinel.addrs[1]", "want host:port"},
		{"addr port 0", sentinel("m", "h:0"), "quota.redis.sentinel.addrs[0]", "want 1-65535"},
		{"addr port name", sentinel("m", "h:redis"), "quota.redis.sentinel.addrs[0]", "want 1-65535"},
		{"addr is a URL", sentinel("m", "redis://h:26379"), "quota.redis.sentinel.addrs[0]", "want host:port"},
		{"with cluster", func(c *Config) {
			sentinel("m", "h:26379")(c)
			c.Quota.Redis.Cluster = []string{"h:7000"}
		}, "quota.redis.sentinel", "cannot be combined with quota.redis.cluster"},
		{"with unix URL", func(c *Config) {
			sentinel("m", "h:26379")(c)
			c.Quota.Redis.URL = "unix:///run/redis.sock"
		}, "quota.redis.sentinel", "unix socket"},
		{"sentinel username alone", func(c *Config) { c.Quota.Redis.Sentinel.Username = "ops" }, "quota.redis.sentinel.username", "needs quota.redis.sentinel.master"},
		{"sentinel password file alone", func(c *Config) { c.Quota.Redis.Sentinel.PasswordFile = "/etc/pw" }, "quota.redis.sentinel.password_file", "needs quota.redis.sentinel.master"},
		{"sentinel password alone", func(c *Config) { c.Quota.Redis.Sentinel.Password = "s3cret-pw" }, "TRENDFETCH_REDIS_SENTINEL_PASSWORD", "unset it"},
		{"cluster addr", func(c *Config) { c.Quota.Redis.Cluster = []string{"h:7000", "h7001"} }, "quota.redis.cluster[1]", "want host:port"},
		{"negative wait", func(c *Config) {
			c.Quota.Redis.URL = "redis://h:1/0"
			c.Quota.Redis.WaitReplicas = -1
		}, "quota.redis.wait_replicas", ">= 0"},
		{"wait on sqlite", func(c *Config) { c.Quota.Redis.WaitReplicas = 1 }, "quota.redis.wait_replicas", "redis quota backend only"},
		{"wait timeout 0", func(c *Config) {
			c.Quota.Redis.URL = "redis://h:1/0"
			c.Quota.Redis.WaitReplicas = 1
			c.Quota.Redis.WaitTimeout = 0
		}, "quota.redis.wait_timeout", "between 1ms and 10s"},
		{"wait timeout 1m", func(c *Config) {
			c.Quota.Redis.URL = "redis://h:1/0"
			c.Quota.Redis.WaitReplicas = 1
			c.Quota.Redis.WaitTimeout = Duration(time.Minute)
		}, "quota.redis.wait_timeout", "between 1ms and 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			tc.edit(c)
			c.complete()
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			if ve.Field != tc.field || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line naming %s with %q", err, tc.field, tc.want)
			}
		})
	}
	// wait_timeout is only checked when waiting is on.
	c := Default()
	c.Quota.Redis.WaitTimeout = 0
	if err := c.Validate(); err != nil {
		t.Errorf("wait_timeout 0 with wait_replicas 0: %v", err)
	}
}

// TestRedisURLProblemsNameThePartNeverTheURL: Validate rejects each Redis URL
// go-redis would reject, naming the wrong part, and the message holds no
// byte run of the URL that could be its password ("LEAK" marks them).
func TestRedisURLProblemsNameThePartNeverTheURL(t *testing.T) {
	for raw, part := range map[string]string{
		"redis:/:oneLEAK@127.0.0.1:6379":                   "must be followed by //",
		"LEAKonlyThePassword":                              "no redis:// scheme",
		"pass:LEAK":                                        "scheme is not redis",
		"redis://:p/wLEAK@127.0.0.1:6379/0":                "port is not a number",
		"redis://:p%zzLEAK@127.0.0.1:6379/0":               "a % is not followed",
		"redis://:LEAK@127.0.0.1:6379/zero":                "database",
		"redis://:LEAK@127.0.0.1:6379/0/1":                 "path must be a database number",
		"redis://:LEAK@127.0.0.1:6379/0?dial_timeout=LEAK": "query option dial_timeout is not a valid duration",
		"redis://127.0.0.1:6379/0?password=LEAK":           "query option is not one go-redis knows",
		"unix://:LEAK@":                                    "socket's path",
	} {
		c, err := read(nil, envOf(map[string]string{"TRENDFETCH_REDIS_URL": raw}), nil)
		if err == nil {
			err = c.Validate()
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), part) {
			t.Errorf("%q: Validate() = %v, want a ValidationError saying %q", raw, err, part)
			continue
		}
		if strings.Contains(err.Error(), "LEAK") {
			t.Errorf("%q: the message quotes the URL: %v", raw, err)
		}
	}
	c, err := read(nil, envOf(map[string]string{"TRENDFETCH_REDIS_URL": "redis://:ok-LEAK@127.0.0.1:6379/0?dial_timeout=1s"}), nil)
	if err != nil || c.Validate() != nil {
		t.Errorf("a good URL: %v", err)
	}
}

// TestQuotaReserve: quota.reserve in units or a percent of an enforced bucket's limit, and
// policy reserve only with a reserve to spend.
func TestQuotaReserve(t *testing.T) {
	c := parseValid(t, "quota:\n  reserve: {units: 5%}\n  policies: {videos.list: reserve}\n")
	if got, _ := c.ReserveUnits(); got["units"] != 475 || c.Policy("videos.list") != callsite.Reserve {
		t.Errorf("reserve %v, policy %s; want units 475 (5%% of 9500), reserve", got, c.Policy("videos.list"))
	}
	for yaml, want := range map[string]string{
		"quota:\n  reserve: {units: 0}":                     "quota.reserve.units = 0: want units 1-9500",
		"quota:\n  reserve: {units: 101%}":                  "quota.reserve.units = 101%: want units",
		"quota:\n  reserve: {nope: 5}":                      "quota.reserve.nope = 5: no enforced bucket",
		"quota:\n  reserve: {units: 5}\n  reserve_for: 13h": "quota.reserve_for = 13h0m0s: want more than 0 and at most 12h0m0s",
		"quota:\n  policies: {videos.list: reserve}":        "quota.policies.videos.list = reserve: no outage reserve to spend",
	} {
		c, err := parse(strings.NewReader(yaml))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", yaml, err, want)
		}
	}
}
