package redisconn

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisURLShape is the form the messages ask for.
const redisURLShape = "want redis://[user:password@]host:port/db (rediss:// for TLS, unix:///path/to.sock for a socket), special characters in the password percent-encoded (e.g. p%2Fw for p/w)"

// redisOptionRE matches go-redis's errors about a query option's value; the
// option's name is a go-redis option (a known word), the value is never
// kept.
var redisOptionRE = regexp.MustCompile(`^redis: invalid ([a-z_]+) (number|duration|boolean)`)

// URLProblem says which part of the Redis URL raw is wrong, by go-redis's
// own parser, naming the part (scheme, slashes, host or port, database,
// query option) and quoting nothing of raw but go-redis option names: the
// parsers' errors quote the text they reject, which may be the password.
// It returns "" for a URL go-redis accepts.
func URLProblem(raw string) string {
	_, err := redis.ParseURL(raw)
	if err == nil {
		return ""
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		switch msg := ue.Err.Error(); {
		case strings.Contains(msg, "invalid port"):
			return "the port is not a number (or the password holds an unencoded / # ? or @); " + redisURLShape
		case strings.Contains(msg, "escape"):
			return "a % is not followed by two hex digits (write % in a password as %25); " + redisURLShape
		case strings.Contains(msg, "missing protocol scheme"), strings.Contains(msg, "first path segment"):
			return "no redis:// scheme: the value is not a URL (a file holding only the password is not enough); " + redisURLShape
		default:
			return "not a valid URL (a password holding / # ? or @ must be percent-encoded); " + redisURLShape
		}
	}
	u, perr := url.Parse(raw)
	if perr != nil { // not reached: go-redis parsed with net/url first
		return "not a valid URL; " + redisURLShape
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	case "":
		return "no redis:// scheme: the value is not a URL (a file holding only the password is not enough); " + redisURLShape
	default:
		return "the scheme is not redis, rediss or unix; " + redisURLShape
	}
	if u.Scheme != "unix" && !strings.HasPrefix(raw[len(u.Scheme):], "://") {
		return "the scheme " + u.Scheme + ": must be followed by // (" + u.Scheme + "://host:port), not a single / or none; " + redisURLShape
	}
	msg := err.Error()
	if m := redisOptionRE.FindStringSubmatch(msg); m != nil && m[1] != "database" {
		return "query option " + m[1] + " is not a valid " + m[2] + "; " + redisURLShape
	}
	switch {
	case strings.Contains(msg, "database number"):
		return "the database (the path /N or ?db=N) is not a number; " + redisURLShape
	case strings.Contains(msg, "invalid URL path"):
		return "the path must be a database number only (e.g. /0); " + redisURLShape
	case strings.Contains(msg, "empty unix socket path"):
		return "a unix: URL needs the socket's path, e.g. unix:///run/redis/redis.sock"
	case strings.HasPrefix(msg, "redis: unexpected option: "):
		return "a query option is not one go-redis knows (such as dial_timeout, read_timeout, db, protocol; a password goes before the host: redis://:password@host:6379/0)"
	}
	return "go-redis cannot use it; " + redisURLShape
}
