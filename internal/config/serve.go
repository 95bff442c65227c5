package config

import "time"

// Serve configures `trendfetch serve` (and `schedule --serve`): the read
// API and dashboard.
type Serve struct {
	// Addr is the listen address (default 127.0.0.1:8080: loopback). A
	// non-loopback address requires TokenFile.
	Addr string `yaml:"addr"`
	// TokenFile holds the bearer token clients must send (Authorization:
	// Bearer ...); "" = no token (loopback only).
	TokenFile string `yaml:"token_file"`
	// RateLimit limits /v1/ requests per client.
	RateLimit ServeRateLimit `yaml:"rate_limit"`
}

// ServeRateLimit is the per-client limit of the read API: at most Limit
// requests per Window per client, the client being its IP address or its
// bearer token (Key "ip" or "token"). Limit 0 takes the default (60 per
// minute, by ip); a negative Limit turns rate limiting off.
type ServeRateLimit struct {
	Limit  int64    `yaml:"limit"`
	Window Duration `yaml:"window"`
	Key    string   `yaml:"key"`
}

// Defaults of serve (DESIGN.md §8: the seed's public endpoint limiter).
const (
	DefaultServeAddr   = "127.0.0.1:8080"
	DefaultServeLimit  = 60
	DefaultServeWindow = time.Minute
)

func (s *Serve) complete() {
	if s.Addr == "" {
		s.Addr = DefaultServeAddr
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
}

func (s *Serve) validate() error {
	if s.RateLimit.Limit > 0 && s.RateLimit.Window.Std() < time.Second {
		return invalid("serve.rate_limit.window", s.RateLimit.Window.Std(), "must be at least 1s")
	}
	switch s.RateLimit.Key {
	case "ip", "token":
	default:
		return invalid("serve.rate_limit.key", s.RateLimit.Key, "want ip or token")
	}
	if s.RateLimit.Key == "token" && s.TokenFile == "" {
		return invalid("serve.rate_limit.key", "token", "needs serve.token_file (clients are told apart by their token)")
	}
	return nil
}

// ReadSecretFile returns the first line of the secret file at path,
// trimmed, reading at most MaxSecretFileBytes. Errors never include the
// content.
func ReadSecretFile(path string) (string, error) { return readSecretFile(path) }
