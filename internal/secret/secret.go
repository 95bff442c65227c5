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

// FragmentLen is the length in bytes of the shortest fragment of a secret
// that is scrubbed: any run of FragmentLen or more bytes of a secret (of
// one of its encoded forms) is masked wherever it appears, so an upstream
// body that echoes a key minus its last characters, or a parser error that
// quotes a password with a neighbouring ':' or '@', leaks nothing. Values
// shorter than FragmentLen are masked only whole.
const FragmentLen = 8

// Set is a concurrency-safe set of secret values. The zero value is empty
// and ready to use; a nil *Set scrubs nothing.
type Set struct {
	mu     sync.RWMutex
	values []string // every registered form, longest first
	// frags holds every FragmentLen-byte window of the forms at least
	// FragmentLen long, as little-endian words; short replaces the shorter
	// forms whole.
	frags *fragments
	short *strings.Replacer
}

// fragments is the set of secret windows, with a bitset of their first two
// bytes that rules out most positions of a text before a map lookup.
type fragments struct {
	words map[uint64]struct{}
	heads [1 << 16 / 64]uint64
}

func (f *fragments) add(w uint64) {
	f.words[w] = struct{}{}
	h := uint16(w)
	f.heads[h/64] |= 1 << (h % 64)
}

// has reports whether the FragmentLen bytes at the start of b are a window.
func (f *fragments) has(b string) bool {
	h := uint16(b[0]) | uint16(b[1])<<8
	if f.heads[h/64]&(1<<(h%64)) == 0 {
		return false
	}
	_, ok := f.words[word(b)]
	return ok
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
	frags := &fragments{words: map[uint64]struct{}{}}
	var pairs []string
	for _, v := range s.values {
		if len(v) < FragmentLen {
			pairs = append(pairs, v, Mask)
			continue
		}
		for i := 0; i+FragmentLen <= len(v); i++ {
			frags.add(word(v[i:]))
		}
	}
	if len(frags.words) == 0 {
		frags = nil
	}
	s.frags, s.short = frags, nil
	if len(pairs) > 0 {
		s.short = strings.NewReplacer(pairs...)
	}
}

// word is the first FragmentLen bytes of b as a little-endian word.
func word(b string) uint64 {
	_ = b[FragmentLen-1]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// String returns text with every registered value, and every fragment of
// FragmentLen or more bytes of one, replaced by Mask (one Mask per
// contiguous run of secret bytes).
func (s *Set) String(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	frags, short := s.frags, s.short
	s.mu.RUnlock()
	if frags != nil && len(text) >= FragmentLen {
		text = maskFragments(text, frags)
	}
	if short != nil {
		text = short.Replace(text)
	}
	return text
}

// maskFragments replaces each maximal run of text covered by windows found
// in frags with Mask; text without such a window is returned as is.
func maskFragments(text string, frags *fragments) string {
	var b strings.Builder
	last := 0            // text[:last] is written to b
	start, end := -1, -1 // the covered run being extended: text[start:end]
	for i := 0; i+FragmentLen <= len(text); i++ {
		if !frags.has(text[i:]) {
			continue
		}
		if i > end { // not touching the current run: flush it, start another
			if start >= 0 {
				b.WriteString(text[last:start])
				b.WriteString(Mask)
				last = end
			}
			start = i
		}
		end = i + FragmentLen
	}
	if start < 0 {
		return text
	}
	b.WriteString(text[last:start])
	b.WriteString(Mask)
	b.WriteString(text[end:])
	return b.String()
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

// URLSecrets returns the secret parts of a Redis or PostgreSQL URL, even of
// one that does not parse: the userinfo password (after the first ':' that follows
// the scheme and its slashes, however many, up to the last '@', so a
// password holding '/', '#' or '?' is caught whole) and the value of a
// "password" query parameter. Content that has neither and is not a
// well-formed redis://, rediss://, postgres://, postgresql:// or unix: URL
// (a file holding only the password) is returned whole: it may be nothing
// but a password.
func URLSecrets(raw string) []string {
	var out []string
	rest := raw
	if i := strings.Index(rest, ":"); i > 0 && !strings.ContainsAny(rest[:i], "@/?#") {
		rest = strings.TrimLeft(rest[i+1:], "/") // drop "scheme:" and its slashes
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
	if len(out) == 0 && !wellFormedURL(raw) {
		out = append(out, raw)
	}
	return out
}

// wellFormedURL reports whether raw parses as a URL whose scheme is
// redis://, rediss://, postgres:// or postgresql:// (with both slashes) or
// unix:.
func wellFormedURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "redis", "rediss", "postgres", "postgresql":
		return strings.HasPrefix(raw[len(u.Scheme):], "://")
	case "unix":
		return true
	}
	return false
}
