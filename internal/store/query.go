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

// Error returns `invalid search query "TEXT" (N bytes): REASON`, TEXT clipped to 200 bytes.
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

// ParseSearch parses user search text (syntax: docs/data.md "Search syntax") into AND-ed groups of
// OR-ed terms and exclusions. Each word and phrase becomes a quoted FTS5 string bound as a
// parameter, so FTS5 operators in user text are just text. It returns a *QueryError for text it
// refuses (empty, an unbalanced double quote, no searchable words, only exclusions, over
// MaxQueryBytes or MaxQueryTerms); it never panics.
func ParseSearch(text string) (*ParsedQuery, error) {
	qerr := func(reason string) error { return &QueryError{Query: text, Reason: reason} }
	if reason := refusedText(text); reason != "" {
		return nil, qerr(reason)
	}
	all, reason := scanTerms([]rune(cleanText(text)))
	if reason != "" {
		return nil, qerr(reason)
	}
	// Drop terms the tokenizer would find no token in.
	all = slices.DeleteFunc(all, func(t qterm) bool { return !t.or && !searchable(t.text) })
	t := resolveOr(all)
	if reason := t.refused(); reason != "" {
		return nil, qerr(reason)
	}
	return &ParsedQuery{t}, nil
}

// refusedText is why text is refused before it is scanned (too long, empty), or "".
func refusedText(text string) string {
	switch {
	case len(text) > MaxQueryBytes:
		return fmt.Sprintf("longer than %d bytes", MaxQueryBytes)
	case strings.TrimSpace(text) == "":
		return "empty query"
	}
	return ""
}

// cleanText is text with invalid UTF-8 and control characters as spaces:
// they separate terms and are never searched for.
func cleanText(text string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, " "))
}

// scanTerms splits rs into words, phrases and OR keywords, a leading -
// excluding one; the reason is "unbalanced double quote" or "".
func scanTerms(rs []rune) (all []qterm, reason string) {
	for i := 0; i < len(rs); {
		not := rs[i] == '-' && i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) && rs[i+1] != '-'
		if not {
			i++
		}
		var t qterm
		switch r := rs[i]; {
		case unicode.IsSpace(r):
			i++
			continue
		case r == '"':
			if t, i = scanPhrase(rs, i); i < 0 {
				return nil, "unbalanced double quote"
			}
		default:
			t, i = scanWord(rs, i)
		}
		t.not, t.or = not, t.or && !not
		all = append(all, t)
	}
	return all, ""
}

// scanPhrase scans the phrase that opens at rs[i] (a double quote) and its trailing stars (a
// prefix), returning it and the index after it; -1 when the quote is not closed.
func scanPhrase(rs []rune, i int) (qterm, int) {
	j := i + 1
	for j < len(rs) && rs[j] != '"' {
		j++
	}
	if j == len(rs) {
		return qterm{}, -1
	}
	t := qterm{text: string(rs[i+1 : j])}
	for j++; j < len(rs) && rs[j] == '*'; j++ {
		t.prefix = true
	}
	return t, j
}

// scanWord scans the word at rs[i] (up to a space or a double quote),
// trailing stars making it a prefix, returning it and the index after it.
func scanWord(rs []rune, i int) (qterm, int) {
	j := i
	for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != '"' {
		j++
	}
	w := string(rs[i:j])
	t := qterm{text: strings.TrimRight(w, "*"), or: w == "OR"}
	t.prefix = len(t.text) < len(w)
	return t, j
}

// resolveOr groups all: OR is an operator only between two included terms (it joins them in one
// group), else the literal word; exclusions apart.
func resolveOr(all []qterm) terms {
	var q terms
	joinNext := false
	plain := func(i int) bool { return i >= 0 && i < len(all) && !all[i].or && !all[i].not }
	for i, t := range all {
		switch {
		case t.not:
			q.not = append(q.not, t)
			continue
		case t.or && plain(i-1) && plain(i+1) && len(q.and) > 0:
			joinNext = true
			continue
		case t.or:
			t = qterm{text: t.text} // literal word "OR"
		}
		if joinNext {
			q.and[len(q.and)-1] = append(q.and[len(q.and)-1], t)
			joinNext = false
		} else {
			q.and = append(q.and, []qterm{t})
		}
	}
	return q
}

// refused is why q makes no query (no terms, only exclusions, too many terms), or "".
func (q terms) refused() string {
	n := len(q.not) + len(slices.Concat(q.and...))
	switch {
	case n == 0:
		return "no searchable words"
	case len(q.and) == 0:
		return "only exclusions (-word): add a word to search for"
	case n > MaxQueryTerms:
		return fmt.Sprintf("more than %d terms", MaxQueryTerms)
	}
	return ""
}

// searchable reports whether s holds a character the unicode61 tokenizer
// keeps in tokens (letters, numbers, private use).
func searchable(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
	})
}
