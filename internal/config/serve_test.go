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
		{"serve: {hosts: [\"example.org:8080\"]}", "serve.hosts[0]"},
		{"serve: {hosts: [\"http://example.org\"]}", "serve.hosts[0]"},
		{"serve: {timeout: 0s}", ""},
		{"serve: {timeout: 100us}", "serve.timeout"},
		{"serve: {max_conns: -1}", "serve.max_conns"},
		{"serve: {rate_limit: {limit: 3000000000}}", "serve.rate_limit.limit"},
		{"serve: {max_conns: 10, max_conns_per_ip: 11}", "serve.max_conns_per_ip"},
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
func TestParseAt(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-03-02T08:00:00Z":      time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC),
		"2026-03-02T09:00:00+01:00": time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC),
		"2026-03-02":                time.Date(2026, 3, 2, 23, 59, 59, 999999000, time.UTC),
	} {
		if got, err := ParseAt(in); err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseAt(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "2026-3-2", ""} {
		if _, err := ParseAt(in); err == nil {
			t.Errorf("ParseAt(%q) accepted", in)
		}
	}
}
