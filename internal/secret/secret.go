// Package secret reads secret files and keeps the secret values a process knows
// to scrub them from its logs, output, errors and stored run reasons, whatever
// quoted them (docs/operations.md "Secrets").
package secret

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Mask replaces every secret value in scrubbed text.
const Mask = "[REDACTED]"

// minLen is the shortest value registered: shorter "secrets" (test keys such
// as "k") would mask ordinary text and protect nothing.
const minLen = 4

// FragmentLen is the length in bytes of the shortest fragment of a secret (of
// an encoded form) scrubbed wherever it appears; shorter values are masked whole.
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

// Add registers values and their encoded forms (URL query and path escaping,
// JSON string escaping). Values shorter than 4 bytes are ignored.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= minLen {
			j, _ := json.Marshal(v)
			s.values = append(s.values, v, url.QueryEscape(v), url.PathEscape(v), string(j[1:len(j)-1]))
		}
	}
	slices.SortFunc(s.values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	s.values = slices.Compact(s.values)
	frags := &fragments{words: map[uint64]struct{}{}}
	var pairs []string
	for _, v := range s.values {
		if len(v) < FragmentLen {
			pairs = append(pairs, v, Mask)
			continue
		}
		for i := 0; i+FragmentLen <= len(v); i++ {
			w := word(v[i:])
			frags.words[w] = struct{}{}
			frags.heads[uint16(w)/64] |= 1 << (uint16(w) % 64)
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
func word(b string) uint64 { return binary.LittleEndian.Uint64([]byte(b[:FragmentLen])) }

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
		if h := uint16(text[i]) | uint16(text[i+1])<<8; frags.heads[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		if _, ok := frags.words[word(text[i:])]; !ok {
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

// Writer returns a writer that scrubs each Write before passing it to w (a
// secret split across two Writes is not caught: zerolog and fmt.Fprint*
// write once per event or call). It reports len(p) written.
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
// one that does not parse: the userinfo password (from the first ':' after
// the scheme and its slashes to the last '@', so a password holding '/', '#'
// or '?' is caught whole) and a "password" query parameter's value. Content
// with neither that is not a well-formed redis://, rediss://, postgres://,
// postgresql:// or unix: URL may be a bare password: it is returned whole.
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
	if len(out) > 0 {
		return out
	}
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "unix" || strings.HasPrefix(raw[len(u.Scheme):], "://") &&
		slices.Contains([]string{"redis", "rediss", "postgres", "postgresql"}, u.Scheme)) {
		return nil
	}
	return []string{raw}
}

// MaxFileBytes bounds a secret file (64 KiB): a larger one is refused, not
// read whole.
const MaxFileBytes = 64 << 10

// ReadFile returns the first line of the regular file at path, trimmed (a
// FIFO, which would block, or a directory is refused). Errors never include
// the content; they say what to do.
func ReadFile(path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("not a regular file (%s): write the secret alone on the first line of a regular file, chmod 600", fi.Mode().Type())
	case fi.Size() > MaxFileBytes:
		return "", fmt.Errorf("%d bytes, larger than %d KiB: a secret file holds one line; check the path", fi.Size(), MaxFileBytes>>10)
	}
	f, err := os.Open(path)
	var raw []byte
	if err == nil {
		defer f.Close()
		raw, err = io.ReadAll(io.LimitReader(f, MaxFileBytes))
	}
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line), nil
}

// Exposed reports whether path is a regular file its group or other users
// can read or write (mode & 0o077 != 0): a secret in it is exposed.
func Exposed(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0
}

// SystemdCredential returns the path of systemd credential name
// (LoadCredential=NAME:PATH in a unit) when the service's
// $CREDENTIALS_DIRECTORY (read with lookup) holds it.
func SystemdCredential(lookup func(string) (string, bool), name string) (string, bool) {
	dir, ok := lookup("CREDENTIALS_DIRECTORY")
	if !ok || dir == "" || name == "" || strings.ContainsAny(name, "/\x00") {
		return "", false
	}
	path := filepath.Join(dir, name)
	_, err := os.Stat(path)
	return path, err == nil
}
