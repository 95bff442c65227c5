package store

import (
	"encoding/json"
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

// needsTrigram reports whether a term of groups contains a character of an
// unsegmented script.
func needsTrigram(groups [][]qterm) bool {
	for _, g := range groups {
		for _, t := range g {
			for _, r := range t.text {
				if r >= 0x0E00 && unicode.In(r, unsegmentedScripts...) { // U+0E00 Thai is the lowest
					return true
				}
			}
		}
	}
	return false
}

// trigramQuery is a query against videos_tri: match is the FTS5
// expression of the groups whose terms all have TrigramMinChars or more
// characters (each a quoted string, i.e. a phrase of its trigrams, which
// matches wherever it occurs as a substring); filter is the JSON array of
// the other groups, e.g. [["ab","東京"]], each of which must have a term
// that is a substring of the title or channel title (SQLite lower(): only
// ASCII letters are case folded, which suits the short CJK words this is
// for).
type trigramQuery struct {
	match, filter string
}

// planTrigram builds the trigramQuery for groups. ok is false when no group
// has only terms of TrigramMinChars or more characters: the index cannot
// answer such a query.
func planTrigram(groups [][]qterm) (q trigramQuery, ok bool) {
	var long [][]qterm
	filter := [][]string{}
	for _, g := range groups {
		short := false
		for _, t := range g {
			if utf8.RuneCountInString(t.text) < TrigramMinChars {
				short = true
			}
		}
		if short {
			var alts []string
			for _, t := range g {
				alts = append(alts, t.text)
			}
			filter = append(filter, alts)
			continue
		}
		// Prefix (*) is implied: a substring match finds every word that
		// starts with the term.
		exact := make([]qterm, len(g))
		for i, t := range g {
			exact[i] = t
			exact[i].prefix = false
		}
		long = append(long, exact)
	}
	if len(long) == 0 {
		return trigramQuery{}, false
	}
	match := renderMatch(long, false)
	f, _ := json.Marshal(filter) // []string values cannot fail
	return trigramQuery{match: match, filter: string(f)}, true
}
