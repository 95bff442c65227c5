package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Search on SQLite (docs/design.md §6): FTS5 tables videos_fts (words,
// unicode61) and videos_tri (trigrams), ranked by bm25 inside the FTS query.

// searchCandidates is SearchCandidates; tests lower it.
var searchCandidates = SearchCandidates

// searchScan bounds how far a phrase or an exclusion is looked for: among the searchScan newest
// videos holding every included word (looseMatch), or for the trigram fill-up each part of a
// phrase as a substring (looseSubstrings), read without positions; tests lower it.
var searchScan = 2 * SearchCandidates

// boundSQL is the rowid of the ?3-th newest match of match in fts at or above rowid from (from
// when fewer): the candidates are the matches at or above it. Walking matches unscored and
// unfiltered reads only the index's position lists.
func boundSQL(fts, match, from string) string {
	return `coalesce((
            SELECT rowid FROM ` + fts + ` WHERE ` + fts + ` MATCH ` + match + ` AND rowid >= ` + from + `
            ORDER BY rowid DESC LIMIT 1 OFFSET ?3 - 1), ` + from + `)`
}

// scanFrom is the rowid of the scan-th newest match of loose in fts (SQL parameters; 0 when fewer,
// or loose empty): where a phrase or an exclusion stops being looked for, so it reads a bounded
// part of the index however rare its matches are.
func scanFrom(fts, loose, scan string) string {
	return `(CASE WHEN ` + loose + ` = '' THEN 0 ELSE coalesce((
            SELECT rowid FROM ` + fts + ` WHERE ` + fts + ` MATCH ` + loose + `
            ORDER BY rowid DESC LIMIT 1 OFFSET ` + scan + ` - 1), 0) END)`
}

// searchSQL is a search on FTS5 table fts, snippets of up to tokens tokens, where holding extra
// conditions, ordered by order (outer: after the join): ranked inside the FTS query (docs/design.md
// §6), so snippet() runs for the ?4 rows returned only; bound is the lowest rowid looked at (SQL).
// Unless order is rank, the score is 0: bm25 would count each phrase's rows over the whole index.
// ?1 MATCH expression, ?2 region (empty: all), ?3 candidate cap (boundSQL), ?4 limit, ?5/?6
// highlight markers, ?7 ellipsis, ?8/?9 JSON arrays of short groups (trigramGroups, each needing a
// term in the title or channel title) and of exclusions ('[]' skips either).
func searchSQL(fts string, tokens int, bound, extra, order, outer string) string {
	text, score := `lower(`+fts+`.title || char(10) || `+fts+`.channel_title)`, "0.0"
	if order == "rank" {
		score = "rank"
	}
	return `
SELECT v.rowid, v.id, v.title, v.channel_title, st.last_seen_at, f.score, f.snip
FROM (
    SELECT rowid AS rid, ` + score + ` AS score, snippet(` + fts + `, -1, ?5, ?6, ?7, ` + fmt.Sprint(tokens) + `) AS snip
    FROM ` + fts + `
    WHERE ` + fts + ` MATCH ?1 AND rowid >= ` + bound + `
      AND (?2 = '' OR EXISTS (
            SELECT 1 FROM entries e JOIN captures cp ON cp.id = e.capture_id
            WHERE e.video = ` + fts + `.rowid AND cp.region = ?2))
      AND (?8 = '[]' OR NOT EXISTS (
            SELECT 1 FROM json_each(?8) g
            WHERE NOT EXISTS (
                SELECT 1 FROM json_each(g.value) t WHERE instr(` + text + `, lower(t.value)) > 0)))
      AND (?9 = '[]' OR NOT EXISTS (
            SELECT 1 FROM json_each(?9) t WHERE instr(` + text + `, lower(t.value)) > 0))` + extra + `
    ORDER BY ` + order + `
    LIMIT ?4
) f
JOIN videos v ON v.rowid = f.rid
LEFT JOIN video_stats st ON st.video_rowid = f.rid
ORDER BY ` + outer
}

// The ranked search statements of the word index and of the trigram index, and fillSQL, the trigram
// fill-up of a word search, newest first, unranked: ?10 (the word-index expression of the
// exclusions, empty: none) replaces ?9, read once over the candidates' range. The fill-up looks no
// lower than scanFrom of its looser match (?11, looseSubstrings, among the newest ?12). The word
// search's candidates are the ?3 newest matches of ?10 (an exclusion's match, ?1 then its
// looseMatch: see words), else of ?1, among the ?12 newest of ?11 (looseMatch; empty: all);
// newestSQL is the word search unranked, newest first.
var (
	wordBound  = boundSQL("videos_fts", "(CASE ?10 WHEN '' THEN ?1 ELSE ?10 END)", scanFrom("videos_fts", "?11", "?12"))
	wordFilter = `
      AND (?10 = '' OR +rowid IN (
            SELECT rowid FROM videos_fts WHERE videos_fts MATCH ?10 AND rowid >= ` + wordBound + `))`
	wordSQL    = searchSQL("videos_fts", 16, wordBound, wordFilter, "rank", "f.score, f.rid")
	newestSQL  = searchSQL("videos_fts", 16, wordBound, wordFilter, "rowid DESC", "f.rid DESC")
	trigramSQL = searchSQL("videos_tri", 24, boundSQL("videos_tri", "?1", "0"), "", "rank", "f.score, f.rid")
	fillFrom   = scanFrom("videos_tri", "?11", "?12")
	fillBound  = boundSQL("videos_tri", "?1", fillFrom)
	fillSQL    = searchSQL("videos_tri", 24, fillBound, `
      AND (?10 = '' OR rowid NOT IN (
            SELECT rowid FROM videos_fts WHERE videos_fts MATCH ?10 AND rowid >= `+fillBound+`))`,
		"rowid DESC", "f.rid DESC")
)

// sqliteSearcher runs a plan's lookups on FTS5; snippet() marks matches with
// markers no stored text can contain (a random nonce per search).
type sqliteSearcher struct {
	db          *sql.DB
	a           searchArgs
	open, close string
}

func newSQLiteSearcher(_ context.Context, db *sql.DB, a searchArgs) (searcher, error) {
	nonce := rand.Text()
	return &sqliteSearcher{db: db, a: a, open: "\x02" + nonce + "\x03", close: "\x03" + nonce + "\x02"}, nil
}

// words looks a phrase or an exclusion up among the newest videos holding its words (looseMatch).
// bm25 counts the rows holding each phrase of the MATCH over the whole index: common words are not
// ranked, and an exclusion is ranked by its words and filtered by its own match (docs/design.md §6).
func (x *sqliteSearcher) words(ctx context.Context, l wordLookup) ([]Hit, error) {
	match, loose := renderMatch(l.terms, l.allPrefix), looseMatch(l.terms, l.allPrefix)
	switch {
	case l.newest:
		return x.query(ctx, newestSQL, ftsMatch{match, l.candidates()}, "[]", jsonText(l.subs), "", loose, searchScan)
	case len(l.terms.not) > 0 && loose != "":
		return x.query(ctx, wordSQL, ftsMatch{loose, l.candidates()}, "[]", jsonText(l.subs), match, loose, searchScan)
	}
	return x.query(ctx, wordSQL, ftsMatch{match, l.candidates()}, "[]", jsonText(l.subs), "", loose, searchScan)
}

// common counts l's looseMatch (else its match) among the newest videos.
func (x *sqliteSearcher) common(ctx context.Context, l wordLookup) (bool, error) {
	match := cmp.Or(looseMatch(l.terms, l.allPrefix), renderMatch(l.terms, l.allPrefix))
	var common bool
	if err := x.db.QueryRowContext(ctx, commonSQL, match, searchCandidates).Scan(&common); err != nil {
		return false, searchErr(x.a.text, err)
	}
	return common, nil
}

// commonSQL reports whether the AND-ed terms ?1 match more than ?2 of the 2 x ?2 newest videos,
// so each term more than half of them. The newest are counted by row, as on PostgreSQL (a pruned
// video leaves a gap in the rowids), in the full-text index's own table of document sizes: a row
// of a few bytes per video, where the videos table holds their text.
const commonSQL = `SELECT count(*) > ?2 FROM videos_fts
WHERE videos_fts MATCH ?1 AND rowid >= coalesce((
    SELECT id FROM videos_fts_docsize ORDER BY id DESC LIMIT 1 OFFSET 2 * ?2 - 1), 0)`

// substrings keeps exclusions out of the trigram MATCH, where bm25 would
// count each excluded phrase's rows over the whole index.
func (x *sqliteSearcher) substrings(ctx context.Context, l substrLookup) ([]Hit, error) {
	match, filter := renderMatch(terms{and: l.long}, false), jsonText(l.short)
	if !l.fill {
		return x.query(ctx, trigramSQL, ftsMatch{match, l.candidates()}, filter, jsonText(texts(l.not)))
	}
	var not string
	if len(l.not) > 0 {
		not = renderMatch(terms{and: [][]qterm{l.not}}, false)
	}
	return x.query(ctx, fillSQL, ftsMatch{match, l.candidates()}, filter, "[]", not, looseSubstrings(l.long), searchScan)
}

// ftsMatch is a search statement's MATCH expression (?1) and how many of its newest matches are
// its candidates (?3).
type ftsMatch struct {
	expr       string
	candidates int
}

// query runs one of the search statements (searchSQL's parameters).
func (x *sqliteSearcher) query(ctx context.Context, query string, m ftsMatch, filter, exclude string, more ...any) ([]Hit, error) {
	args := []any{m.expr, x.a.region, m.candidates, x.a.limit, x.open, x.close, SnippetEllipsis, filter, exclude}
	var hits []Hit
	err := each(ctx, x.db, query, append(args, more...), func(rows *sql.Rows) error {
		var (
			h             Hit
			last, snippet sql.NullString
		)
		err := rows.Scan(&h.rowid, &h.VideoID, &h.Title, &h.ChannelTitle, &last, &h.Score, &snippet)
		h.LastSeen = parseTime(last)
		h.Snippet, h.Highlights = unmark(snippet.String, x.open, x.close)
		hits = append(hits, h)
		return err
	})
	if err != nil {
		return nil, searchErr(x.a.text, err)
	}
	return hits, nil
}

// unmark removes the markers open and close from snip and returns the
// marked parts' code point offsets.
func unmark(snip, open, close string) (string, [][2]int) {
	var b strings.Builder
	marks := [][2]int{}
	at := 0 // code points written
	for {
		before, rest, ok := strings.Cut(snip, open)
		word, after, closed := strings.Cut(rest, close)
		if !ok || !closed {
			break
		}
		start := at + utf8.RuneCountInString(before)
		at = start + utf8.RuneCountInString(word)
		b.WriteString(before + word)
		if at > start {
			marks = append(marks, [2]int{start, at})
		}
		snip = after
	}
	b.WriteString(snip)
	return b.String(), marks
}

// renderMatch writes t as an FTS5 expression (for either index): groups joined with AND, a group's
// terms with OR, then NOT each exclusion. allPrefix makes every included term a prefix query.
func renderMatch(t terms, allPrefix bool) string {
	and := make([]string, len(t.and))
	for i, g := range t.and {
		or := make([]string, len(g))
		for j, q := range g {
			or[j] = ftsTerm(q, allPrefix)
		}
		if and[i] = strings.Join(or, " OR "); len(g) > 1 {
			and[i] = "(" + and[i] + ")"
		}
	}
	m := strings.Join(and, " AND ")
	if len(t.not) > 0 {
		m = "(" + m + ")"
	}
	for _, q := range t.not {
		m += " NOT " + ftsTerm(q, false)
	}
	return m
}

// ftsTerm is one term as a quoted FTS5 string, " *" after a prefix.
func ftsTerm(q qterm, prefix bool) string {
	s := `"` + strings.ReplaceAll(q.text, `"`, `""`) + `"`
	if q.prefix || prefix {
		s += " *"
	}
	return s
}

// looseMatch is what every match of t matches, read without positions:
// its included terms with each phrase's space-separated parts AND-ed, no
// exclusion ("" when that is t's own match: no phrase, no exclusion).
func looseMatch(t terms, allPrefix bool) string {
	all := slices.Concat(t.and...)
	if len(t.not) == 0 && !slices.ContainsFunc(all, func(q qterm) bool { return len(strings.Fields(q.text)) > 1 }) {
		return ""
	}
	if slices.ContainsFunc(all, func(q qterm) bool { return len(strings.Fields(q.text)) == 0 }) {
		return "" // a term without parts: no looser match to write
	}
	and := make([]string, len(t.and))
	for i, g := range t.and {
		or := make([]string, len(g))
		for j, q := range g {
			parts := strings.Fields(q.text)
			for k, w := range parts {
				parts[k] = ftsTerm(qterm{text: w}, (q.prefix || allPrefix) && k == len(parts)-1)
			}
			or[j] = "(" + strings.Join(parts, " AND ") + ")"
		}
		and[i] = "(" + strings.Join(or, " OR ") + ")"
	}
	return strings.Join(and, " AND ")
}

// looseSubstrings is what every trigram match of the groups long matches:
// each term's space-separated parts of TrigramMinChars or more AND-ed (""
// when no term has more than one part, or one has no such part).
func looseSubstrings(long [][]qterm) string {
	if !slices.ContainsFunc(slices.Concat(long...), func(q qterm) bool { return len(strings.Fields(q.text)) > 1 }) {
		return ""
	}
	and := make([]string, len(long))
	for i, g := range long {
		or := make([]string, len(g))
		for j, q := range g {
			var parts []string
			for _, w := range strings.Fields(q.text) {
				if utf8.RuneCountInString(w) >= TrigramMinChars {
					parts = append(parts, ftsTerm(qterm{text: w}, false))
				}
			}
			if len(parts) == 0 {
				return ""
			}
			or[j] = "(" + strings.Join(parts, " AND ") + ")"
		}
		and[i] = "(" + strings.Join(or, " OR ") + ")"
	}
	return strings.Join(and, " AND ")
}
