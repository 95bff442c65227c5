package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on search text, so that one query cannot make FTS5 do unbounded work.
const (
	// MaxQueryBytes is the longest accepted search text.
	MaxQueryBytes = 1000
	// MaxQueryTerms is the most words/phrases in one query.
	MaxQueryTerms = 32
)

// QueryError reports search text (or search parameters) that cannot be
// turned into a query. Reason is one line, e.g. "unbalanced double quote".
// Callers should treat it as a usage error.
type QueryError struct {
	Query  string
	Reason string
}

// Error returns `invalid search query "TEXT": REASON`.
func (e *QueryError) Error() string {
	q := e.Query
	if len(q) > 200 {
		q = strings.ToValidUTF8(q[:200], "") + "…"
	}
	return fmt.Sprintf("invalid search query %q (%d bytes): %s", q, len(e.Query), e.Reason)
}

type qterm struct {
	text   string
	prefix bool
	or     bool // the bare keyword OR (resolved later)
}

// ParseQuery translates user search text into an FTS5 MATCH expression,
// which the caller must bind as a parameter (never splice into SQL).
//
// Syntax:
//
//	lofi beats        both words (AND); punctuation such as - : . is literal
//	"lofi hip hop"    exact phrase
//	beat*  "hip ho"*  prefix: last word starts with ...
//	cats OR dogs      either; OR binds adjacent terms: a b OR c = a AND (b OR c)
//
// Every word and phrase becomes a quoted FTS5 string, so FTS5 operators and
// column filters in user text are just text. Words without any letter or
// digit are dropped (the tokenizer would ignore them anyway); an OR at the
// start, at the end or next to another OR is an ordinary word.
//
// It returns a *QueryError for empty text, an unbalanced double quote, no
// searchable words, more than MaxQueryBytes bytes or MaxQueryTerms terms.
// It never panics.
func ParseQuery(text string) (string, error) {
	groups, err := parseTerms(text)
	if err != nil {
		return "", err
	}
	return renderMatch(groups, false), nil
}

// parseTerms splits search text into AND-ed groups of OR-ed terms (see
// ParseQuery for the syntax and errors).
func parseTerms(text string) ([][]qterm, error) {
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

	// Scan into words, phrases and OR keywords.
	var terms []qterm
	rs := []rune(clean)
	for i := 0; i < len(rs); {
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
			t := qterm{text: string(rs[i+1 : j])}
			j++
			for j < len(rs) && rs[j] == '*' {
				t.prefix = true
				j++
			}
			terms = append(terms, t)
			i = j
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && rs[j] != '"' {
				j++
			}
			w := string(rs[i:j])
			t := qterm{text: strings.TrimRight(w, "*")}
			t.prefix = len(t.text) < len(w)
			t.or = w == "OR"
			terms = append(terms, t)
			i = j
		}
	}

	// Drop terms the tokenizer would find no token in.
	kept := terms[:0]
	for _, t := range terms {
		if t.or || searchable(t.text) {
			kept = append(kept, t)
		}
	}
	terms = kept

	// Resolve OR: an operator only between two non-OR terms.
	var groups [][]qterm
	joinNext := false
	for i, t := range terms {
		if t.or {
			prevTerm := i > 0 && !terms[i-1].or && len(groups) > 0
			nextTerm := i+1 < len(terms) && !terms[i+1].or
			if prevTerm && nextTerm {
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
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	switch {
	case n == 0:
		return nil, qerr("no searchable words")
	case n > MaxQueryTerms:
		return nil, qerr(fmt.Sprintf("more than %d terms", MaxQueryTerms))
	}
	return groups, nil
}

// renderMatch writes groups as an FTS5 expression (for either index):
// every term a quoted string, groups joined with AND, terms of a group with
// OR. allPrefix makes every term a prefix query.
func renderMatch(groups [][]qterm, allPrefix bool) string {
	var b strings.Builder
	for gi, g := range groups {
		if gi > 0 {
			b.WriteString(" AND ")
		}
		if len(g) > 1 {
			b.WriteByte('(')
		}
		for ti, t := range g {
			if ti > 0 {
				b.WriteString(" OR ")
			}
			b.WriteByte('"')
			b.WriteString(strings.ReplaceAll(t.text, `"`, `""`))
			b.WriteByte('"')
			if t.prefix || allPrefix {
				b.WriteString(" *")
			}
		}
		if len(g) > 1 {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// searchable reports whether s holds a character the unicode61 tokenizer
// keeps in tokens (letters, numbers, private use).
func searchable(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) {
			return true
		}
	}
	return false
}
