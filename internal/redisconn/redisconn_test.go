package redisconn

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const secret = "s3cr3t-Pa55"

// TestInvalidURLRedacted: a URL New refuses is named in its error without
// its password.
func TestInvalidURLRedacted(t *testing.T) {
	for _, u := range []string{
		"redis://user:" + secret + "@host:notaport/0",
		"http://user:" + secret + "@host:6379",
		"redis://user:" + secret + "@host:6379/notadb",
		"redis://user:" + secret + "@host:6379/0?bogus=1",
	} {
		_, err := New(u, nil, Sentinel{})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("New(%q): err = %v, want an error without the password", redact(u), err)
		}
		t.Logf("%v", err)
	}
	if got := redact("rediss://u:" + secret + "@h:1/2"); strings.Contains(got, secret) {
		t.Fatalf("Redact = %q", got)
	}
}

// TestDefaults: short timeouts unless the URL or an option says otherwise,
// and the settings that cannot work are refused.
func TestDefaults(t *testing.T) {
	c, err := New("redis://127.0.0.1:1", nil, Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := c.(*redis.Client).Options()
	if o.DialTimeout != defaultDialTimeout || o.ReadTimeout != defaultIOTimeout || o.WriteTimeout != defaultIOTimeout || o.MaxRetries != defaultMaxRetries {
		t.Fatalf("options: dial %v read %v write %v retries %d", o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries)
	}
	// One dial attempt per command (a dead Redis fails fast), context deadlines honoured.
	if o.DialerRetries != 1 || !o.ContextTimeoutEnabled || o.PoolTimeout != o.DialTimeout+o.ReadTimeout {
		t.Fatalf("options: dialer retries %d, context timeouts %v, pool timeout %v", o.DialerRetries, o.ContextTimeoutEnabled, o.PoolTimeout)
	}
	c2, err := New("redis://127.0.0.1:1?dial_timeout=1s&read_timeout=1s", nil, Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if o := c2.(*redis.Client).Options(); o.DialTimeout != time.Second || o.ReadTimeout != time.Second {
		t.Fatalf("overrides: dial %v read %v", o.DialTimeout, o.ReadTimeout)
	}
	if _, err := New("", nil, Sentinel{}); err == nil {
		t.Fatal("no URL and no cluster: want an error")
	}
	if _, err := New("redis://h:1/2", []string{"h:1"}, Sentinel{}); err == nil {
		t.Fatal("cluster with db 2: want an error")
	}
}

// TestSentinelClientOptions: the failover client gets the same
// timeouts, retries and pool settings as the standalone client (config's
// TestRedisSentinelAndWaitValidate refuses settings that cannot work
// together).
func TestSentinelClientOptions(t *testing.T) {
	plain, err := New("redis://:pw@127.0.0.1:1/2", nil, Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fo, err := New("redis://:pw@ignored:1/2", nil, Sentinel{Master: "mymaster", Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	p, f := plain.(*redis.Client).Options(), fo.(*redis.Client).Options()
	if f.Addr != "FailoverClient" {
		t.Fatalf("sentinel client is not a failover client (Addr %q)", f.Addr)
	}
	type knobs struct {
		Dial, Read, Write, Pool, MinBackoff, MaxBackoff time.Duration
		Retries, DialerRetries, DB                      int
		Password                                        string
		CtxTimeout                                      bool
	}
	k := func(o *redis.Options) knobs {
		return knobs{o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout, o.MinRetryBackoff, o.MaxRetryBackoff, o.MaxRetries, o.DialerRetries, o.DB, o.Password, o.ContextTimeoutEnabled}
	}
	if k(p) != k(f) {
		t.Fatalf("failover client options %+v differ from the standalone client's %+v", k(f), k(p))
	}
	if c, err := New("", nil, Sentinel{Master: "m", Addrs: []string{"127.0.0.1:26379"}}); err != nil {
		t.Errorf("sentinel without a URL (no password): %v", err)
	} else {
		c.Close()
	}
}
