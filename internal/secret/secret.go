// Package secret keeps the secret values a process knows (API keys of every
// credential, Redis passwords) and scrubs them from text at the process's
// boundaries: the log and output writers, printed errors and stored run
// reasons. Scrubbing at the boundary catches a secret whatever its source
// (an upstream error body that echoes the request URL, a parse error that
// quotes a URL), so code below need not know which errors may carry one.
package secret

import (
	"encoding/json"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Mask replaces every secret value in scrubbed text.
const Mask = "[REDACTED]"

// minLen is the shortest value registered: shorter "secrets" (test keys such
// as "k") would mask ordinary text and protect nothing.
const minLen = 4

// Set is a concurrency-safe set of secret values. The zero value is empty
// and ready to use; a nil *Set scrubs nothing.
type Set struct {
	mu       sync.RWMutex
	values   []string // longest first, so a value never hides a longer one
	replacer *strings.Replacer
}

// Add registers values and their encoded forms (URL query and path escaping,
// JSON string escaping), so a secret quoted in a URL or a JSON log field is
// caught too. Values shorter than 4 bytes and blank values are ignored.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, v := range s.values {
		seen[v] = true
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minLen {
			continue
		}
		j, _ := json.Marshal(v)
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1])} {
			if !seen[form] {
				seen[form] = true
				s.values = append(s.values, form)
			}
		}
	}
	sort.Slice(s.values, func(i, k int) bool { return len(s.values[i]) > len(s.values[k]) })
	pairs := make([]string, 0, 2*len(s.values))
	for _, v := range s.values {
		pairs = append(pairs, v, Mask)
	}
	s.replacer = strings.NewReplacer(pairs...)
}

// String returns text with every registered value replaced by Mask.
func (s *Set) String(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	r := s.replacer
	s.mu.RUnlock()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// Error returns err with a scrubbed message; errors.Is and errors.As still
// see err's chain (Unwrap). nil stays nil.
func (s *Set) Error(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbed{msg: s.String(err.Error()), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Writer returns a writer that scrubs each Write before passing it to w.
// A secret split across two Writes is not caught: zerolog and fmt.Fprint*
// write one event or one call per Write. It reports len(p) written when w
// accepts the scrubbed bytes.
func (s *Set) Writer(w io.Writer) io.Writer { return &writer{s: s, w: w} }

type writer struct {
	s *Set
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.s.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// RedisURLSecrets returns the password parts of a Redis URL, even of one
// that does not parse: the userinfo password (after the first ':' that
// follows "//", up to the last '@', so a password holding '/', '#' or '?' is
// caught whole) and the value of a "password" query parameter.
func RedisURLSecrets(raw string) []string {
	var out []string
	rest := raw
	if _, after, ok := strings.Cut(rest, "//"); ok {
		rest = after
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo := rest[:at]
		if _, pw, ok := strings.Cut(userinfo, ":"); ok {
			out = append(out, pw)
			if u, err := url.PathUnescape(pw); err == nil {
				out = append(out, u)
			}
		}
	}
	for _, part := range strings.FieldsFunc(raw, func(r rune) bool { return r == '?' || r == '&' || r == '#' }) {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(k, "password") {
			out = append(out, v)
			if u, err := url.QueryUnescape(v); err == nil {
				out = append(out, u)
			}
		}
	}
	return out
}
