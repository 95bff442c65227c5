package store

import (
	"encoding/json"
	"slices"
	"unicode"
	"unicode/utf8"
)

// TrigramMinChars is the shortest term the trigram index can look up: it
// indexes every window of 3 characters, so a shorter string has no trigram.
const TrigramMinChars = 3

// unsegmentedScripts are scripts that unicode61 cannot split into words:
// written without spaces (Han, Kana, Thai, Lao, Khmer, Myanmar) or, for
// Hangul, with particles attached to words ("방탄소년단이"), so that the word
// a user searches for is rarely a whole token.
var unsegmentedScripts = []*unicode.RangeTable{
	unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar,
}

// needsTrigram reports whether an included term of q contains a character
// of an unsegmented script.
func needsTrigram(q terms) bool {
	for _, g := range q.and {
		for _, t := range g {
			if unsegmented(t.text) {
				return true
			}
		}
	}
	return false
}

// unsegmented reports whether s contains a character of an unsegmented
// script.
func unsegmented(s string) bool {
	for _, r := range s {
		if r >= 0x0E00 && unicode.In(r, unsegmentedScripts...) { // U+0E00 Thai is the lowest
			return true
		}
	}
	return false
}

// splitUnsegmented moves q's exclusions with unsegmented characters out,
// for the word index to check them by substring.
func splitUnsegmented(q terms) (terms, []string) {
	out := terms{and: q.and}
	subs := []string{}
	for _, t := range q.not {
		if unsegmented(t.text) {
			subs = append(subs, t.text)
		} else {
			out.not = append(out.not, t)
		}
	}
	return out, subs
}

// texts returns the texts of ts ([] when none).
func texts(ts []qterm) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.text)
	}
	return out
}

// jsonText is v in JSON ([]string values cannot fail).
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// trigramGroups splits q's AND-ed groups into those whose terms all have
// TrigramMinChars or more characters (looked up) and the others (checked
// by substring).
func trigramGroups(q terms) (long, short [][]qterm) {
	for _, g := range q.and {
		if slices.ContainsFunc(g, func(t qterm) bool { return utf8.RuneCountInString(t.text) < TrigramMinChars }) {
			short = append(short, g)
		} else {
			long = append(long, g)
		}
	}
	return long, short
}

// trigramQuery is a query against videos_tri: match is the FTS5 expression
// of the long groups (trigramGroups; a quoted term is a phrase of trigrams,
// found as a substring); filter the JSON array of the short groups, e.g.
// [["ab","東京"]], each needing a term in the title or channel title;
// exclude the JSON array of exclusions, none of which may be there (lower()
// folds ASCII only, enough for short CJK words). Exclusions stay out of
// match: bm25 would count each excluded phrase's rows over the whole index.
type trigramQuery struct {
	match, filter, exclude string
}

// planTrigram builds the trigramQuery for q; ok is false when no group is
// long (the index cannot answer).
func planTrigram(q terms) (tq trigramQuery, ok bool) {
	groups, short := trigramGroups(q)
	if len(groups) == 0 {
		return trigramQuery{}, false
	}
	var long terms
	for _, g := range groups {
		exact := slices.Clone(g)
		for i := range exact {
			exact[i].prefix = false // implied: a substring is found in every word it starts
		}
		long.and = append(long.and, exact)
	}
	filter := [][]string{}
	for _, g := range short {
		filter = append(filter, texts(g))
	}
	tq = trigramQuery{match: renderMatch(long, false), filter: jsonText(filter), exclude: jsonText(texts(q.not))}
	return tq, true
}
