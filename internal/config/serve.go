package config

import (
	"fmt"
	"math"
	"net"
	"strings"
	"time"
)

// Serve configures `trendfetch serve` (and `schedule --serve`): the read
// API and dashboard, and what bounds its work (docs/api.md "What serve bounds").
type Serve struct {
	// Addr is the listen address (default 127.0.0.1:8080: loopback). A
	// non-loopback address requires TokenFile.
	Addr string `yaml:"addr"`
	// TokenFile holds the bearer token clients must send (Authorization:
	// Bearer ...); "" = no token (loopback only).
	TokenFile string `yaml:"token_file"`
	// Hosts are the host names clients may send in the Host header besides
	// loopback names (localhost, *.localhost) and IP addresses, e.g. the
	// name a reverse proxy forwards (DNS rebinding defence: other names get
	// 421).
	Hosts []string `yaml:"hosts"`
	// Timeout is each request's deadline, database work included (default
	// 5s); a request that reaches it is answered 503.
	Timeout Duration `yaml:"timeout"`
	// MaxConns caps open client connections in total (default 512);
	// MaxConnsPerIP per client address (default 32; a reverse proxy is one
	// address).
	MaxConns      int `yaml:"max_conns"`
	MaxConnsPerIP int `yaml:"max_conns_per_ip"`
	// RateLimit limits /v1/ requests per client.
	RateLimit ServeRateLimit `yaml:"rate_limit"`
}

// ServeRateLimit is the per-client limit of the read API: at most Limit
// requests per Window per client, the client being its IP address (an IPv6
// address by its /64) or its bearer token (Key "ip" or "token"). Limit 0
// takes the default (60 per minute, by ip); a negative Limit turns rate
// limiting off. Algorithm is "counter" (default: the sliding-window counter,
// O(1) memory per client, approximate; docs/serve-rate-limit.md) or "log"
// (the exact sliding-window log of the quota limiter).
type ServeRateLimit struct {
	Limit     int64    `yaml:"limit"`
	Window    Duration `yaml:"window"`
	Key       string   `yaml:"key"`
	Algorithm string   `yaml:"algorithm"`
}

// Defaults of serve (docs/design.md §8: the seed's public endpoint limiter).
const (
	DefaultServeAddr          = "127.0.0.1:8080"
	DefaultServeLimit         = 60
	DefaultServeWindow        = time.Minute
	DefaultServeTimeout       = 5 * time.Second
	DefaultServeMaxConns      = 512
	DefaultServeMaxConnsPerIP = 32
	DefaultServeAlgorithm     = "counter"
)

func (s *Serve) complete() {
	if s.Addr == "" {
		s.Addr = DefaultServeAddr
	}
	if s.Timeout == 0 {
		s.Timeout = Duration(DefaultServeTimeout)
	}
	if s.MaxConns == 0 {
		s.MaxConns = DefaultServeMaxConns
	}
	if s.MaxConnsPerIP == 0 {
		s.MaxConnsPerIP = DefaultServeMaxConnsPerIP
	}
	for i, h := range s.Hosts {
		s.Hosts[i] = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
	}
	if s.RateLimit.Limit == 0 {
		s.RateLimit.Limit = DefaultServeLimit
	}
	if s.RateLimit.Window == 0 {
		s.RateLimit.Window = Duration(DefaultServeWindow)
	}
	if s.RateLimit.Key == "" {
		s.RateLimit.Key = "ip"
	}
	if s.RateLimit.Algorithm == "" {
		s.RateLimit.Algorithm = DefaultServeAlgorithm
	}
}

func (s *Serve) validate() error {
	if s.Timeout.Std() < time.Millisecond {
		return invalid("serve.timeout", s.Timeout.Std(), "must be at least 1ms (default 5s)")
	}
	if s.MaxConns < 1 {
		return invalid("serve.max_conns", s.MaxConns, "must be at least 1 (default %d)", DefaultServeMaxConns)
	}
	if s.MaxConnsPerIP < 1 || s.MaxConnsPerIP > s.MaxConns {
		return invalid("serve.max_conns_per_ip", s.MaxConnsPerIP, "must be between 1 and serve.max_conns (%d)", s.MaxConns)
	}
	for i, h := range s.Hosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return invalid(fmt.Sprintf("serve.hosts[%d]", i), h, "want a host name without port or scheme, e.g. trends.example.org")
		}
	}
	if s.RateLimit.Limit > 0 && s.RateLimit.Window.Std() < time.Second {
		return invalid("serve.rate_limit.window", s.RateLimit.Window.Std(), "must be at least 1s")
	}
	if s.RateLimit.Limit > math.MaxInt32 || float64(s.RateLimit.Limit)*float64(s.RateLimit.Window.Std().Milliseconds()) > 1<<53 {
		return invalid("serve.rate_limit.limit", s.RateLimit.Limit, "too large for the window %s: at most %d, and limit x window under 2^53 ms", s.RateLimit.Window.Std(), math.MaxInt32)
	}
	switch s.RateLimit.Key {
	case "ip", "token":
	default:
		return invalid("serve.rate_limit.key", s.RateLimit.Key, "want ip or token")
	}
	if s.RateLimit.Key == "token" && s.TokenFile == "" {
		return invalid("serve.rate_limit.key", "token", "needs serve.token_file (clients are told apart by their token)")
	}
	switch s.RateLimit.Algorithm {
	case "counter", "log":
	default:
		return invalid("serve.rate_limit.algorithm", s.RateLimit.Algorithm, "want counter (default) or log")
	}
	return nil
}

// ParseAt reads a point in time as the CLI (--at, --until) and the read
// API (?at=) take it: an RFC 3339 time (2026-03-02T08:00:00Z), or a UTC date
// (2026-03-02) meaning the end of that day. The result is UTC.
func ParseAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.Add(24*time.Hour - time.Microsecond), nil
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time (2026-03-02T08:00:00Z) or a date (2026-03-02)")
}

// IsLoopbackHost reports whether host (no port) names only the loopback
// interface: localhost, a name under .localhost (RFC 6761), or a loopback
// IP address.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
