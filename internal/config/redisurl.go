package config

import "github.com/trendfetch/trendfetch/internal/redisconn"

// validateRedisURL checks the Redis URL before any connection, naming the
// wrong part and never quoting the URL (redisconn.URLProblem): it may hold
// a password, and a URL that does not parse cannot be redacted reliably.
func validateRedisURL(raw string) error {
	if p := redisconn.URLProblem(raw); raw != "" && p != "" {
		s := Lookup("quota.redis.url")
		return invalid(s.Env+" / "+s.Secret, "(not shown: it may hold a password)", "%s", p)
	}
	return nil
}
