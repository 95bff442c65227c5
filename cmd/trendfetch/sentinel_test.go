package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// TestRedisSentinelWiring: with quota.redis.sentinel in the config and only
// the password and db in TRENDFETCH_REDIS_URL (its host does not exist),
// the binary finds the master through a real redis-sentinel, spends there
// (db 3), and reports it in quota status. With wait_replicas: 1 and the
// replica frozen, the admission is not confirmed and the fail-closed call
// site stops the run with exit 75.
func TestRedisSentinelWiring(t *testing.T) {
	const pw = "wiring-pw"
	g := redistest.StartSentinel(t, 1, 1, pw, "")
	_, url, e := sampleEnv(t, "US")
	e.vars["TRENDFETCH_REDIS_URL"] = "redis://:" + pw + "@ignored.invalid:1/3"
	cfg := e.writeConfig(`quota:
  redis:
    sentinel:
      master: ` + g.Name + `
      addrs: [` + strings.Join(g.Addrs(), ", ") + `]
    wait_replicas: 1
    wait_timeout: 500ms
  policies:
    videos.list: fail-closed
`)
	res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 {
		t.Fatalf("run through Sentinel: exit %d\n%s", res.code, res.stderr)
	}
	res = e.run("--config", cfg, "quota", "status", "--json")
	var st quota.StatusView
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.Backend != "redis" || st.Buckets[0].Used != 2 {
		t.Fatalf("quota status through Sentinel: %v %+v\n%s", err, st, res.stderr)
	}
	if keys := g.Master.Do("-n", "3", "KEYS", "trendfetch:*"); !strings.Contains(keys, "trendfetch:{default}:units") {
		t.Fatalf("no usage keys in db 3 of the master: %q", keys)
	}

	g.Replicas[0].Freeze()
	defer g.Replicas[0].Thaw()
	res = e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 75 || !strings.Contains(res.stderr, "not confirmed by enough replicas") || !strings.Contains(res.stderr, "limiter unavailable") {
		t.Fatalf("run with the replica frozen: exit %d, want 75 (fail-closed) naming the unconfirmed admission\n%s", res.code, res.stderr)
	}
	res = e.run("--config", cfg, "quota", "status", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.Buckets[0].Used != 3 {
		t.Errorf("master holds %+v (%v), want 3 units used: the unconfirmed entry stays", st.Buckets, err)
	}
}

// TestRedisSentinelPassword: Sentinels with a password of their own are
// reached with TRENDFETCH_REDIS_SENTINEL_PASSWORD or
// quota.redis.sentinel.password_file; without it, or with a wrong one,
// quota status exits 2 (a configuration error, quota.AccessError) naming
// the Sentinels' answer, and no output quotes either password.
func TestRedisSentinelPassword(t *testing.T) {
	const pw, sentinelPW = "master-pw-1", "sentinel-pw-2"
	g := redistest.StartSentinel(t, 0, 1, pw, sentinelPW)
	e := newEnv(t)
	e.vars["TRENDFETCH_REDIS_URL"] = "redis://:" + pw + "@ignored.invalid:1/3"
	sentinelYAML := "quota:\n  redis:\n    sentinel:\n      master: " + g.Name + "\n      addrs: [" + strings.Join(g.Addrs(), ", ") + "]\n"
	cfg := e.writeConfig(sentinelYAML)
	status := func(what string, wantCode int) result {
		t.Helper()
		res := e.run("--config", cfg, "quota", "status", "--json")
		if res.code != wantCode {
			t.Fatalf("%s: exit %d, want %d\n%s%s", what, res.code, wantCode, res.stdout, res.stderr)
		}
		for _, secret := range []string{pw, sentinelPW, "wrong-" + sentinelPW} {
			if strings.Contains(res.stdout+res.stderr, secret) {
				t.Fatalf("%s: output quotes a password\n%s%s", what, res.stdout, res.stderr)
			}
		}
		return res
	}
	if res := status("no Sentinel password", 2); !strings.Contains(res.stderr, "NOAUTH") {
		t.Errorf("no Sentinel password: stderr does not name the Sentinels' NOAUTH\n%s", res.stderr)
	}
	e.vars["TRENDFETCH_REDIS_SENTINEL_PASSWORD"] = "wrong-" + sentinelPW
	if res := status("wrong Sentinel password", 2); !strings.Contains(res.stderr, "WRONGPASS") {
		t.Errorf("wrong Sentinel password: stderr does not name the Sentinels' WRONGPASS\n%s", res.stderr)
	}
	e.vars["TRENDFETCH_REDIS_SENTINEL_PASSWORD"] = sentinelPW
	var st quota.StatusView
	if res := status("TRENDFETCH_REDIS_SENTINEL_PASSWORD", 0); json.Unmarshal([]byte(res.stdout), &st) != nil || st.Backend != "redis" {
		t.Fatalf("status with the Sentinels' password: %+v\n%s", st, res.stdout)
	}
	delete(e.vars, "TRENDFETCH_REDIS_SENTINEL_PASSWORD")
	pwFile := filepath.Join(e.dir, "sentinel-password")
	if err := os.WriteFile(pwFile, []byte(sentinelPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = e.writeConfig(sentinelYAML + "      password_file: " + pwFile + "\n")
	status("password_file", 0)
}

// TestRedisSentinelConfigErrors: a bad quota.redis.sentinel or wait setting
// exits 2 with a one-line error naming the setting, before any I/O.
func TestRedisSentinelConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"addrs without master", "quota:\n  redis:\n    sentinel:\n      addrs: [127.0.0.1:26379]\n", "quota.redis.sentinel.master"},
		{"bad addr", "quota:\n  redis:\n    sentinel:\n      master: m\n      addrs: [127.0.0.1]\n", "quota.redis.sentinel.addrs[0] = 127.0.0.1: want host:port"},
		{"with cluster", "quota:\n  redis:\n    cluster: [127.0.0.1:7000]\n    sentinel:\n      master: m\n      addrs: [127.0.0.1:26379]\n", "cannot be combined with quota.redis.cluster"},
		{"wait timeout", "quota:\n  redis:\n    sentinel:\n      master: m\n      addrs: [127.0.0.1:26379]\n    wait_replicas: 1\n    wait_timeout: 0s\n", "quota.redis.wait_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			res := e.run("--config", e.writeConfig(tc.yaml), "quota", "status")
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if res.code != 2 || !strings.Contains(lines[0], tc.want) || len(lines) > 2 {
				t.Fatalf("exit %d, want 2 with one line containing %q:\n%s", res.code, tc.want, res.stderr)
			}
		})
	}
}
