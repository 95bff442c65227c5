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
	"unicode"
)

// Mask replaces every secret value in scrubbed text.
const Mask = "[REDACTED]"

// minLen is the shortest value registered: shorter "secrets" (test keys such
// as "k") would mask ordinary text and protect nothing.
const minLen = 4

// FragmentLen is the length in bytes of the shortest fragment of an API key
// (of an encoded form) scrubbed wherever it appears.
const FragmentLen = 8

// StrongLen is the length in bytes from which a secret is masked wherever it appears: a shorter
// one, a word (letters only) or a name that appears in the configuration (Public) would mask
// ordinary text, so it is masked only where it stands as a secret (docs/operations.md "Secrets").
const StrongLen = 12

// Set is a concurrency-safe set of secret values. The zero value is empty
// and ready to use; a nil *Set scrubs nothing.
type Set struct {
	mu     sync.RWMutex
	keys   []string        // API keys (AddKey)
	values []string        // other secrets (Add)
	public map[string]bool // names the configuration shows (Public), lower case
	m      *matcher        // compiled from the three above
}

// matcher is a Set compiled: what String and Captured apply.
type matcher struct {
	strong   []string   // forms of the strong values but the keys (frags has those), longest first: masked anywhere
	frags    *fragments // every FragmentLen-byte window of the strong API keys' forms
	weak     []string   // forms of the other values, longest first: masked in context only
	captured []string   // the strong API keys' forms, longest first: all that captured data loses
}

// fragments is the set of secret windows, with a bitset of their first two
// bytes that rules out most positions of a text before a map lookup.
type fragments struct {
	words map[uint64]struct{}
	heads [1 << 16 / 64]uint64
}

// Add registers secret values (passwords, URLs' secret parts, tokens) and
// their encoded forms. Values shorter than 4 bytes are ignored.
func (s *Set) Add(values ...string) { s.add(&s.values, values) }

// AddKey registers API keys: as Add, and a strong key's exact forms are also
// what Captured masks, and every FragmentLen-byte run of them is masked by
// String (an upstream error may echo a key minus its last characters).
func (s *Set) AddKey(keys ...string) { s.add(&s.keys, keys) }

// Public registers names that appear in the configuration (user names,
// database names, hosts): a secret equal to one is masked only in context.
func (s *Set) Public(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.public == nil {
		s.public = map[string]bool{}
	}
	for _, n := range names {
		s.public[strings.ToLower(strings.TrimSpace(n))] = true
	}
	s.compile()
}

func (s *Set) add(dst *[]string, values []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= minLen {
			*dst = append(*dst, v)
		}
	}
	s.compile()
}

// forms returns v and its encoded forms (URL query and path escaping, JSON string escaping).
func forms(v string) []string {
	j, _ := json.Marshal(v)
	return []string{v, url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1])}
}

// strong reports whether v can be masked wherever it appears without damage:
// StrongLen bytes or more, not letters only, not a public name.
func (s *Set) strong(v string) bool {
	return len(v) >= StrongLen && strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) }) &&
		!s.public[strings.ToLower(v)]
}

// compile rebuilds s.m from the registered values; s.mu is held.
func (s *Set) compile() {
	m := &matcher{}
	for i, v := range slices.Concat(s.keys, s.values) {
		switch {
		case !s.strong(v):
			m.weak = append(m.weak, forms(v)...)
		case i < len(s.keys):
			m.captured = append(m.captured, forms(v)...)
			m.frags = m.frags.add(forms(v))
		default:
			m.strong = append(m.strong, forms(v)...)
		}
	}
	m.weak, m.strong, m.captured = longestFirst(m.weak), longestFirst(m.strong), longestFirst(m.captured)
	s.m = m
}

// longestFirst sorts values longest first, without duplicates.
func longestFirst(values []string) []string {
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(values)
}

// add returns f (or a new set when nil) with every window of values.
func (f *fragments) add(values []string) *fragments {
	if f == nil {
		f = &fragments{words: map[uint64]struct{}{}}
	}
	for _, v := range values {
		for i := 0; i+FragmentLen <= len(v); i++ {
			w := word(v[i:])
			f.words[w] = struct{}{}
			f.heads[uint16(w)/64] |= 1 << (uint16(w) % 64)
		}
	}
	return f
}

// word is the first FragmentLen bytes of b as a little-endian word.
func word(b string) uint64 { return binary.LittleEndian.Uint64([]byte(b[:FragmentLen])) }

func (s *Set) matcher() *matcher {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m
}

// String returns text with every strong value, every fragment of FragmentLen
// or more bytes of a strong API key (one Mask per contiguous run), and every
// other value where it stands as a secret (contextual) replaced by Mask.
func (s *Set) String(text string) string {
	m := s.matcher()
	if m == nil {
		return text
	}
	if m.frags != nil && len(text) >= FragmentLen {
		text = maskFragments(text, m.frags)
	}
	for _, v := range m.strong {
		text = maskWhere(text, v, anywhere)
	}
	for _, w := range m.weak {
		text = maskWhere(text, w, contextual)
	}
	return text
}

// Captured returns captured text (a title, a tag, a search query) with the
// exact forms of the strong API keys replaced by Mask: what an API answer
// holds is stored as captured otherwise, whatever else it shares with a secret.
func (s *Set) Captured(text string) string {
	if m := s.matcher(); m != nil {
		for _, v := range m.captured {
			text = maskWhere(text, v, anywhere)
		}
	}
	return text
}

// anywhere is maskWhere's test that masks every occurrence.
func anywhere(before, after string) bool { return true }

// maskWhere replaces each occurrence of w in text for which masked(the text
// before it, the text after it) holds by Mask.
func maskWhere(text, w string, masked func(before, after string) bool) string {
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(text[i:], w)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(w)
		i = start + 1
		if masked(text[:start], text[end:]) {
			b.WriteString(text[last:start])
			b.WriteString(Mask)
			last, i = end, end
		}
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// contextual reports whether a value between before and after stands as a secret: a URL's userinfo
// password (":" before, "@" after); or, whole up to a delimiter, a parameter whose name says it
// holds one (key=, token=, password=), a header or field that does (Authorization:, "password":
// ...), or an Authorization scheme's credentials (Bearer, Basic, Token).
func contextual(before, after string) bool {
	if strings.HasSuffix(before, ":") && strings.HasPrefix(after, "@") {
		return true
	}
	if after != "" && !strings.ContainsAny(after[:1], "&#;,)}]<>\"' \t\r\n") {
		return false
	}
	lower := strings.ToLower(before)
	if strings.HasSuffix(lower, "bearer ") || strings.HasSuffix(lower, "basic ") || strings.HasSuffix(lower, "token ") {
		return true
	}
	name := strings.TrimRight(lower, "\"' ")
	sep := name[max(len(name)-1, 0):]
	name = strings.TrimRight(strings.TrimSuffix(name, sep), "\"' ")
	name = name[strings.LastIndexFunc(name, notNameRune)+1:]
	switch sep {
	case "=":
		return slices.ContainsFunc(paramNames, func(n string) bool { return strings.Contains(name, n) })
	case ":":
		return slices.Contains(fieldNames, name)
	}
	return false
}

// notNameRune reports whether r cannot be part of a parameter's or field's name.
func notNameRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-'
}

// paramNames are the parts of a parameter's name (name=value) that say its value is a secret;
// fieldNames are the header and field names (name: value) that do.
var (
	paramNames = []string{"key", "token", "pass", "pw", "secret", "auth", "credential"}
	fieldNames = []string{"authorization", "proxy-authorization", "x-goog-api-key", "password", "token", "api_key", "secret"}
)

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

// URLSecrets returns the secret parts of a Redis or PostgreSQL URL, even of one that does not
// parse: the userinfo password (from the first ':' after the scheme and its slashes to the last
// '@', so a password holding '/', '#' or '?' is caught whole) and a "password" query parameter's
// value. Content with neither that is not a well-formed redis://, rediss://, postgres://,
// postgresql:// or unix: URL may be a bare password: it is returned whole.
func URLSecrets(raw string) []string {
	out := append(userinfoPassword(raw), passwordParams(raw)...)
	if len(out) > 0 || wellFormedURL(raw) {
		return out
	}
	return []string{raw}
}

// userinfoPassword returns the password of raw's userinfo, as written and unescaped: from the first
// ':' after the scheme and its slashes to the last '@'.
func userinfoPassword(raw string) []string {
	rest := raw
	if i := strings.Index(rest, ":"); i > 0 && !strings.ContainsAny(rest[:i], "@/?#") {
		rest = strings.TrimLeft(rest[i+1:], "/") // drop "scheme:" and its slashes
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return nil
	}
	if u, err := url.PathUnescape(pw); err == nil {
		return []string{pw, u}
	}
	return []string{pw}
}

// passwordParams returns the values of raw's "password" query parameters, as written and unescaped.
func passwordParams(raw string) []string {
	var out []string
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

// wellFormedURL reports whether raw is a well-formed redis://, rediss://,
// postgres://, postgresql:// or unix: URL (not a bare password).
func wellFormedURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "unix" || strings.HasPrefix(raw[len(u.Scheme):], "://") &&
		slices.Contains([]string{"redis", "rediss", "postgres", "postgresql"}, u.Scheme))
}

// MaxFileBytes bounds a secret file (64 KiB): a larger one is refused, not read whole.
const MaxFileBytes = 64 << 10

// ReadFile returns the first line of the regular file at path, trimmed (a FIFO, which would block,
// or a directory is refused). Errors never include the content; they say what to do.
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

// SystemdCredential returns the path of systemd credential name (LoadCredential=NAME:PATH in a
// unit) when the service's $CREDENTIALS_DIRECTORY (read with lookup) holds it.
func SystemdCredential(lookup func(string) (string, bool), name string) (string, bool) {
	dir, ok := lookup("CREDENTIALS_DIRECTORY")
	if !ok || dir == "" || name == "" || strings.ContainsAny(name, "/\x00") {
		return "", false
	}
	path := filepath.Join(dir, name)
	_, err := os.Stat(path)
	return path, err == nil
}
