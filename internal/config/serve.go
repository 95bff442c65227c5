package config

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
)

// Serve is the `serve` section (`serve`, `schedule --serve`); a
// non-loopback Addr requires TokenFile.
type Serve struct {
	Addr          string         `yaml:"addr"`
	TokenFile     string         `yaml:"token_file"`
	Hosts         []string       `yaml:"hosts"`
	Timeout       Duration       `yaml:"timeout"`
	MaxConns      int            `yaml:"max_conns"`
	MaxConnsPerIP int            `yaml:"max_conns_per_ip"`
	CORSOrigins   []string       `yaml:"cors_origins"`
	RateLimit     ServeRateLimit `yaml:"rate_limit"`
}

// ServeRateLimit is serve.rate_limit: at most Limit requests per Window per client (Key: ip or
// token; Limit < 0: off), by Algorithm counter (the sliding-window counter, the only one).
type ServeRateLimit struct {
	Limit     int64    `yaml:"limit"`
	Window    Duration `yaml:"window"`
	Key       string   `yaml:"key"`
	Algorithm string   `yaml:"algorithm"`
}

// DefaultServeTimeout is serve.timeout's default.
const DefaultServeTimeout = 5 * time.Second

// complete fills the defaults (docs/design.md §8).
func (s *Serve) complete() {
	s.Addr = cmp.Or(s.Addr, "127.0.0.1:8080")
	s.Timeout = cmp.Or(s.Timeout, Duration(DefaultServeTimeout))
	s.MaxConns = cmp.Or(s.MaxConns, 512)
	s.MaxConnsPerIP = cmp.Or(s.MaxConnsPerIP, 32)
	for i, h := range s.Hosts {
		s.Hosts[i] = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
	}
	r := &s.RateLimit
	r.Limit = cmp.Or(r.Limit, 60)
	r.Window = cmp.Or(r.Window, Duration(time.Minute))
	r.Key = cmp.Or(r.Key, "ip")
	r.Algorithm = cmp.Or(r.Algorithm, "counter")
}

// validate checks the serve section.
func (s *Serve) validate() error {
	if s.Timeout.Std() < time.Millisecond {
		return invalid("serve.timeout", s.Timeout.Std(), "must be at least 1ms (default %s)", DefaultServeTimeout)
	}
	if s.MaxConns < 1 {
		return invalid("serve.max_conns", s.MaxConns, "must be at least 1")
	}
	if s.MaxConnsPerIP < 1 || s.MaxConnsPerIP > s.MaxConns {
		return invalid("serve.max_conns_per_ip", s.MaxConnsPerIP, "must be between 1 and serve.max_conns (%d)", s.MaxConns)
	}
	for i, h := range s.Hosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return invalid(fmt.Sprintf("serve.hosts[%d]", i), h, "want a host name without port or scheme, e.g. trends.example.org")
		}
	}
	for i, o := range s.CORSOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return invalid(fmt.Sprintf("serve.cors_origins[%d]", i), o, "want an origin: scheme://host[:port], e.g. https://app.example.org (no path)")
		}
	}
	return s.validateRateLimit()
}

// validateRateLimit checks serve.rate_limit: window, limit, key and algorithm.
func (s *Serve) validateRateLimit() error {
	r := s.RateLimit
	if r.Limit > 0 && r.Window.Std() < time.Second {
		return invalid("serve.rate_limit.window", r.Window.Std(), "must be at least 1s")
	}
	if r.Limit > math.MaxInt32 || float64(r.Limit)*float64(r.Window.Std().Milliseconds()) > 1<<53 {
		return invalid("serve.rate_limit.limit", r.Limit, "too large for the window %s: at most %d, and limit x window under 2^53 ms", r.Window.Std(), math.MaxInt32)
	}
	if err := oneOf("serve.rate_limit.key", r.Key, "ip", "token"); err != nil {
		return err
	}
	if r.Key == "token" && s.TokenFile == "" {
		return invalid("serve.rate_limit.key", "token", "needs serve.token_file (clients are told apart by their token)")
	}
	return oneOf("serve.rate_limit.algorithm", r.Algorithm, "counter")
}
