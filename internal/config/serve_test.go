package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestServeSettings: serve's defaults, and each bad setting named in one
// line.
func TestServeSettings(t *testing.T) {
	parse := func(yaml string) (*Config, error) {
		c, err := parse(strings.NewReader(yaml))
		if err != nil {
			return nil, err
		}
		c.complete()
		return c, c.Validate()
	}
	c, err := parse("serve:\n  hosts: [Trends.Example.org.]\n")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Serve
	if s.Timeout.Std() != 5*time.Second || s.MaxConns != 512 || s.MaxConnsPerIP != 32 || s.RateLimit.Algorithm != "counter" ||
		len(s.Hosts) != 1 || s.Hosts[0] != "trends.example.org" {
		t.Errorf("defaults: %+v", s)
	}
	for _, tc := range []struct{ yaml, field string }{
		{"serve: {rate_limit: {algorithm: fixed}}", "serve.rate_limit.algorithm"},
		{"serve: {rate_limit: {algorithm: log}}", "serve.rate_limit.algorithm"},
		{"serve: {hosts: [\"example.org:8080\"]}", "serve.hosts[0]"},
		{"serve: {hosts: [\"http://example.org\"]}", "serve.hosts[0]"},
		{"serve: {timeout: 0s}", ""},
		{"serve: {timeout: 100us}", "serve.timeout"},
		{"serve: {max_conns: -1}", "serve.max_conns"},
		{"serve: {rate_limit: {limit: 3000000000}}", "serve.rate_limit.limit"},
		{"serve: {rate_limit: {limit: 2000000000, window: 2h}}", "serve.rate_limit.limit"},
		{"serve: {rate_limit: {limit: 2000000000, window: 1h}}", ""},
		{"serve: {rate_limit: {window: 999ms}}", "serve.rate_limit.window"},
		{"serve: {rate_limit: {limit: -1, window: 1ms}}", ""},
		{"serve: {max_conns: 10, max_conns_per_ip: 11}", "serve.max_conns_per_ip"},
		{"serve: {cors_origins: [\"https://app.example.org\", \"http://127.0.0.1:3000\"]}", ""},
		{"serve: {cors_origins: [\"https://app.example.org/\"]}", "serve.cors_origins[0]"},
		{"serve: {cors_origins: [\"*\"]}", "serve.cors_origins[0]"},
	} {
		_, err := parse(tc.yaml)
		var ve *ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("%s: %v, want a validation error of %s", tc.yaml, err, tc.field)
		}
	}
}

// TestParseAt: the time forms the CLI (--at) and the API (?at=) accept.
