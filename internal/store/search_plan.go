package store

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A search runs in three parts: ParseSearch (query.go) turns text into terms, planSearch picks the
// index lookups that answer them (the same on both engines, docs/design.md §6), and the engine's
// searcher runs each lookup (search_sqlite.go, search_pg.go).

// searchArgs is one search as its searcher sees it: the parsed terms, the
// text as typed (for errors), the region ("" all) and the most hits.
type searchArgs struct {
	t      terms
	text   string
	region string
	limit  int
}

// searcher runs a plan's lookups on one engine, each returning at most the
// search's limit of hits, best first.
type searcher interface {
	// words looks up the word index.
	words(ctx context.Context, l wordLookup) ([]Hit, error)
	// substrings looks up the trigram (substring) index.
	substrings(ctx context.Context, l substrLookup) ([]Hit, error)
	// common reports whether more than searchCandidates of the 2 x searchCandidates newest videos
	// (the highest rowids, counted by row) hold every included word of l (a phrase's words
	// anywhere, no exclusion).
	common(ctx context.Context, l wordLookup) (bool, error)
}

// wordLookup is a word-index lookup of terms (allPrefix: every included term a prefix, a
// best-effort lookup of an unsegmented script), subs excluded by substring (exclusions the word
// index cannot split); newest: not ranked, the candidates newest first, score 0 (commonWords).
type wordLookup struct {
	terms     terms
	allPrefix bool
	subs      []string
	newest    bool
}

// candidates is how many of l's newest matches are its candidates.
func (l wordLookup) candidates() int {
	if l.allPrefix {
		return unsegmentedCandidates()
	}
	return searchCandidates
}

// substrLookup is a trigram-index lookup of the long groups (trigramGroups), the short ones checked
// by substring and not excluded: ranked, or (fill) newest first without the word-index matches of
// the exclusions, to fill up a word lookup's hits.
type substrLookup struct {
	long  [][]qterm
	short [][]string
	not   []qterm
	fill  bool
}

// candidates is how many of l's newest matches are its candidates: a fill-up's are a word
// search's.
func (l substrLookup) candidates() int {
	if l.fill {
		return searchCandidates
	}
	return unsegmentedCandidates()
}

// unsegmentedCandidates is UnsegmentedCandidates in proportion to searchCandidates (tests lower it).
func unsegmentedCandidates() int {
	return searchCandidates * UnsegmentedCandidates / SearchCandidates
}

// searchPlan is the lookups that answer a search: words, substr, or words
// then substr (fill) when words found fewer hits than the limit.
type searchPlan struct {
	words  *wordLookup
	substr *substrLookup
}

// planSearch picks the index(es) that answer t: the trigram index when an included term is of an
// unsegmented script (CJK, Thai...) and long enough, the word index (every term a prefix) when none
// is; else the word index, filled up from the trigram index.
func planSearch(t terms) searchPlan {
	long, short := trigramGroups(t)
	if !needsTrigram(t) {
		p := searchPlan{words: &wordLookup{terms: t, subs: []string{}}}
		if len(long) > 0 {
			p.substr = &substrLookup{long: long, short: short, not: t.not, fill: true}
		}
		return p
	}
	if len(long) > 0 {
		return searchPlan{substr: &substrLookup{long: long, short: short, not: t.not}}
	}
	w, subs := terms{and: t.and}, []string{}
	for _, q := range t.not {
		if unsegmented(q.text) {
			subs = append(subs, q.text)
		} else {
			w.not = append(w.not, q)
		}
	}
	return searchPlan{words: &wordLookup{terms: w, allPrefix: true, subs: subs}}
}

// run runs p's lookups on x and returns at most limit hits.
func (p searchPlan) run(ctx context.Context, x searcher, limit int) ([]Hit, error) {
	if p.words == nil {
		return x.substrings(ctx, *p.substr)
	}
	l, err := commonWords(ctx, x, *p.words)
	if err != nil {
		return nil, err
	}
	hits, err := x.words(ctx, l)
	if err != nil || len(hits) >= limit || p.substr == nil {
		return hits, err
	}
	more, err := x.substrings(ctx, *p.substr)
	if err != nil {
		return nil, err
	}
	return fillUp(hits, more, limit), nil
}

// commonWords is l not ranked (newest) when its terms are AND-ed words (no OR) that more than half
// of the newest videos hold, each of them: the rank would give each its floor weight and rest on
// how often they occur, and counting their rows over the whole index was most of such a search's
// time (docs/design.md §6). A best-effort prefix lookup (allPrefix: terms of an unsegmented script
// too short for the trigram index) stays ranked: its terms are prefixes of whole runs of that
// script, not words, and on PostgreSQL counting them cost more than the search (docs/scale.md).
func commonWords(ctx context.Context, x searcher, l wordLookup) (wordLookup, error) {
	if l.allPrefix || slices.ContainsFunc(l.terms.and, func(g []qterm) bool { return len(g) > 1 }) {
		return l, nil
	}
	var err error
	l.newest, err = x.common(ctx, l)
	return l, err
}

// fillUp appends to hits the videos of more not among them, up to limit.
func fillUp(hits, more []Hit, limit int) []Hit {
	seen := make(map[string]bool, len(hits))
	for _, h := range hits {
		seen[h.VideoID] = true
	}
	for _, h := range more {
		if len(hits) == limit {
			break
		}
		if !seen[h.VideoID] {
			hits = append(hits, h)
		}
	}
	return hits
}

// TrigramMinChars is the shortest term the trigram index can look up: it
// indexes every window of 3 characters, so a shorter string has no trigram.
const TrigramMinChars = 3

// unsegmentedScripts are scripts unicode61 cannot split into words: written
// without spaces, or (Hangul) with particles attached ("방탄소년단이").
var unsegmentedScripts = []*unicode.RangeTable{
	unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar,
}

// needsTrigram reports whether an included term of q contains a character of an unsegmented script.
func needsTrigram(q terms) bool {
	return slices.ContainsFunc(slices.Concat(q.and...), func(t qterm) bool { return unsegmented(t.text) })
}

// unsegmented reports whether s contains a character of an unsegmented script.
func unsegmented(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r >= 0x0E00 && unicode.In(r, unsegmentedScripts...) // U+0E00 Thai is the lowest
	})
}

// texts returns the texts of ts ([] when none).
func texts(ts []qterm) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.text)
	}
	return out
}

// trigramGroups splits q's AND-ed groups: long ones (every term of TrigramMinChars or more, looked
// up; a substring is found in every word it starts, so prefix is dropped) and the texts of short
// ones (checked by substring).
func trigramGroups(q terms) (long [][]qterm, short [][]string) {
	short = [][]string{}
	for _, g := range q.and {
		if slices.ContainsFunc(g, func(t qterm) bool { return utf8.RuneCountInString(t.text) < TrigramMinChars }) {
			short = append(short, texts(g))
			continue
		}
		exact := slices.Clone(g)
		for i := range exact {
			exact[i].prefix = false
		}
		long = append(long, exact)
	}
	return long, short
}
