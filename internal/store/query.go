package store

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Limits on search text, so that one query cannot make FTS5 do unbounded
// work: MaxQueryBytes bytes, MaxQueryTerms words or phrases.
const (
	MaxQueryBytes = 1000
	MaxQueryTerms = 32
)

// QueryError reports search text or parameters that make no query, a usage
// error. Reason is one line, e.g. "unbalanced double quote".
type QueryError struct {
	Query, Reason string
}

// ExitCode is exitcode.Usage: a query that does not parse.
func (e *QueryError) ExitCode() int { return exitcode.Usage }

// Error returns `invalid search query "TEXT" (N bytes): REASON`, TEXT
// clipped to 200 bytes.
func (e *QueryError) Error() string {
	return fmt.Sprintf("invalid search query %q (%d bytes): %s", termtext.Clip(e.Query, 200), len(e.Query), e.Reason)
}

type qterm struct {
	text   string
	prefix bool
	or     bool // the bare keyword OR (resolved later)
	not    bool // written -word or -"phrase": excluded
}

// terms is parsed search text: AND-ed groups of OR-ed terms, minus exclusions.
type terms struct {
	and [][]qterm
	not []qterm
}

// ParsedQuery is search text parsed once (ParseSearch), which
// SearchQuery.Parsed carries so that it is not parsed again.
type ParsedQuery struct{ terms terms }

// ParseSearch parses user search text (syntax: docs/data.md "Search
// syntax") into AND-ed groups of OR-ed terms and exclusions. Each word and
// phrase becomes a quoted FTS5 string bound as a parameter, so FTS5 operators
// in user text are just text. It returns a *QueryError for text it refuses
// (empty, an unbalanced double quote, no searchable words, only exclusions,
// over MaxQueryBytes or MaxQueryTerms); it never panics.
func ParseSearch(text string) (*ParsedQuery, error) {
	qerr := func(reason string) error { return &QueryError{Query: text, Reason: reason} }
	if len(text) > MaxQueryBytes {
		return nil, qerr(fmt.Sprintf("longer than %d bytes", MaxQueryBytes))
	}
	if strings.TrimSpace(text) == "" {
		return nil, qerr("empty query")
	}
	clean := strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, " "))

	// Scan into words, phrases and OR keywords; a leading - excludes one.
	var all []qterm
	rs := []rune(clean)
	for i := 0; i < len(rs); {
		not := rs[i] == '-' && i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) && rs[i+1] != '-'
		if not {
			i++
		}
		switch r := rs[i]; {
		case unicode.IsSpace(r):
			i++
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				j++
			}
			if j == len(rs) {
				return nil, qerr("unbalanced double quote")
			}
			t := qterm{text: string(rs[i+1 : j]), not: not}
			j++
			for j < len(rs) && rs[j] == '*' {
				t.prefix = true
				j++
			}
			all = append(all, t)
			i = j
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != '"' {
				j++
			}
			w := string(rs[i:j])
			t := qterm{text: strings.TrimRight(w, "*"), not: not}
			t.prefix = len(t.text) < len(w)
			t.or = w == "OR" && !not
			all = append(all, t)
			i = j
		}
	}

	// Drop terms the tokenizer would find no token in.
	all = slices.DeleteFunc(all, func(t qterm) bool { return !t.or && !searchable(t.text) })

	// Resolve OR: an operator only between two included terms.
	var groups [][]qterm
	var not []qterm
	joinNext := false
	plain := func(i int) bool { return i >= 0 && i < len(all) && !all[i].or && !all[i].not }
	for i, t := range all {
		if t.not {
			not = append(not, t)
			continue
		}
		if t.or {
			if plain(i-1) && plain(i+1) && len(groups) > 0 {
				joinNext = true
				continue
			}
			t = qterm{text: t.text} // literal word "OR"
		}
		if joinNext {
			groups[len(groups)-1] = append(groups[len(groups)-1], t)
			joinNext = false
		} else {
			groups = append(groups, []qterm{t})
		}
	}
	n := len(not) + len(slices.Concat(groups...))
	switch {
	case n == 0:
		return nil, qerr("no searchable words")
	case len(groups) == 0:
		return nil, qerr("only exclusions (-word): add a word to search for")
	case n > MaxQueryTerms:
		return nil, qerr(fmt.Sprintf("more than %d terms", MaxQueryTerms))
	}
	return &ParsedQuery{terms{and: groups, not: not}}, nil
}

// searchable reports whether s holds a character the unicode61 tokenizer
// keeps in tokens (letters, numbers, private use).
func searchable(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
	})
}
