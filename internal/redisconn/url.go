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

// redisOptionRE matches go-redis's errors about a query option's value,
// keeping the option's name (a go-redis word), never the value.
var redisOptionRE = regexp.MustCompile(`^redis: invalid ([a-z_]+) (number|duration|boolean)`)

const noScheme = "no redis:// scheme: the value is not a URL (a file holding only the password is not enough)"

// urlProblems maps a piece of the parsers' error ("url: " + net/url's, or
// go-redis's) to what to tell the user, first match wins.
var urlProblems = []struct{ match, reason string }{
	{"invalid port", "the port is not a number (or the password holds an unencoded / # ? or @)"},
	{"escape", "a % is not followed by two hex digits (write % in a password as %25)"},
	{"missing protocol scheme", noScheme},
	{"first path segment", noScheme},
	{"url: ", "not a valid URL (a password holding / # ? or @ must be percent-encoded)"},
	{"invalid URL scheme", "the scheme is not redis, rediss or unix"},
	{"database number", "the database (the path /N or ?db=N) is not a number"},
	{"invalid URL path", "the path must be a database number only (e.g. /0)"},
	{"empty unix socket path", "a unix: URL needs the socket's path, e.g. unix:///run/redis/redis.sock"},
	{"unexpected option", "a query option is not one go-redis knows (such as dial_timeout, read_timeout, db, protocol; a password goes before the host: redis://:password@host:6379/0)"},
}

// URLProblem says which part of the Redis URL raw go-redis refuses (scheme, slashes, host or port,
// database, query option), quoting nothing of raw (the parsers' errors quote what they reject,
// maybe the password). It returns "" for a URL go-redis accepts.
func URLProblem(raw string) string {
	_, err := redis.ParseURL(raw)
	if err == nil {
		return ""
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = "url: " + ue.Err.Error()
	} else if u, _ := url.Parse(raw); u.Scheme == "" {
		msg = "missing protocol scheme"
	} else if (u.Scheme == "redis" || u.Scheme == "rediss") && !strings.HasPrefix(raw[len(u.Scheme):], "://") {
		return "the scheme " + u.Scheme + ": must be followed by // (" + u.Scheme + "://host:port), not a single / or none; " + redisURLShape
	}
	if m := redisOptionRE.FindStringSubmatch(msg); m != nil && m[1] != "database" {
		return "query option " + m[1] + " is not a valid " + m[2] + "; " + redisURLShape
	}
	for _, p := range urlProblems {
		if strings.Contains(msg, p.match) {
			return p.reason + "; " + redisURLShape
		}
	}
	return "go-redis cannot use it; " + redisURLShape
}
