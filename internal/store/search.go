package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Search limits and ranking.
const (
	// DefaultSearchLimit is used when SearchQuery.Limit is 0.
	DefaultSearchLimit = 20
	// MaxSearchLimit is the largest accepted SearchQuery.Limit.
	MaxSearchLimit = 1000
	// SearchCandidates bounds a search: only the newest matches (highest
	// rowid) are filtered and scored (docs/design.md §6).
	SearchCandidates = 10000
	// SnippetEllipsis marks text cut from Hit.Snippet.
	SnippetEllipsis = "…"
)

// SearchQuery is a full-text search over stored videos.
type SearchQuery struct {
	// Text is user search text; see ParseSearch for the syntax.
	Text string
	// Parsed, when set, is Text parsed by ParseSearch (not parsed again).
	Parsed *ParsedQuery
	// Region, if set, keeps only videos with a snapshot in that region.
	Region string
	// Limit is the most hits returned: 0 means DefaultSearchLimit; negative
	// or above MaxSearchLimit is a *QueryError.
	Limit int
	// Offset skips the best Offset hits (SearchPage's cursor), 0 to
	// MaxSearchLimit-1: pages end at the MaxSearchLimit-th hit.
	Offset int
}

// Hit is one search result.
type Hit struct {
	VideoID, Title, ChannelTitle string
	// Snippet is a short extract of the best-matching column (title, tags,
	// channel or description), plain text (SnippetEllipsis marks cuts).
	Snippet string
	// Highlights are the matched parts of Snippet, in order, not overlapping,
	// as [start, end) code point offsets (no text can forge a match); a CJK
	// or Thai term is marked where it occurs, not the whole run around it.
	Highlights [][2]int
	// Score is lower for better hits, comparable within one query and
	// index only (bm25, or minus ts_rank_cd on PostgreSQL: docs/api.md).
	Score float64
	// LastSeen is the latest capture time of the video.
	LastSeen time.Time
	// Regions are the regions whose chart (kind chart) the video was in,
	// by region code, with its best and last rank there.
	Regions []HitRegion
}

// HitRegion is a search hit's record on one region's chart.
type HitRegion struct {
	Region string `json:"region"`
	// BestRank is its highest chart position (lowest number); LastRank its
	// position in the latest chart capture it was in, at LastAt.
	BestRank int       `json:"best_rank"`
	LastRank int       `json:"last_rank"`
	LastAt   time.Time `json:"last_at"`
}

// hitRegions fills Hit.Regions: one query over the hits' chart entries
// (entries_video index), newest capture last.
func (s *Store) hitRegions(ctx context.Context, hits []Hit) error {
	ids := make([]any, len(hits))
	byID := make(map[string]int, len(hits))
	for i := range hits {
		ids[i] = hits[i].VideoID
		byID[hits[i].VideoID] = i
		hits[i].Regions = []HitRegion{}
	}
	err := each(ctx, s.db, `
SELECT v.id, c.region, e.rank, c.captured_at
FROM videos v
JOIN entries e ON e.video = v.rowid
JOIN captures c ON c.id = e.capture_id
WHERE v.id IN `+valueRows(1, len(ids))+` AND c.kind = 'chart'
ORDER BY v.id, c.region, c.captured_at, c.id`, ids, func(rows *sql.Rows) error {
		var (
			id, region string
			rank       int
			ts         sql.NullString
		)
		if err := rows.Scan(&id, &region, &rank, &ts); err != nil {
			return err
		}
		h := &hits[byID[id]]
		n := len(h.Regions)
		if n == 0 || h.Regions[n-1].Region != region {
			h.Regions = append(h.Regions, HitRegion{Region: region, BestRank: rank})
			n++
		}
		r := &h.Regions[n-1]
		r.BestRank = min(r.BestRank, rank)
		r.LastRank, r.LastAt = rank, parseTime(ts)
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot read chart ranks of hits: %w", err)
	}
	return nil
}

// searchCandidates is SearchCandidates; tests lower it.
var searchCandidates = SearchCandidates

// boundSQL is the rowid of the ?3-th newest match of ?1 in fts (0 when
// fewer): the candidates are the matches at or above it. Walking matches
// unscored and unfiltered reads only the index's position lists.
func boundSQL(fts string) string {
	return `coalesce((
            SELECT rowid FROM ` + fts + ` WHERE ` + fts + ` MATCH ?1
            ORDER BY rowid DESC LIMIT 1 OFFSET ?3 - 1), 0)`
}

// searchSQL is a search on FTS5 table fts, snippets of up to tokens tokens,
// where holding extra conditions, ordered by order (outer: after the join):
// ranked inside the FTS query (docs/design.md §6), so snippet() runs for the
// ?4 rows returned only. ?1 MATCH expression, ?2 region (empty: all), ?3
// candidate cap (boundSQL), ?4 limit, ?5/?6 highlight markers, ?7 ellipsis,
// ?8/?9 JSON arrays of short groups (trigramGroups, each needing a term in
// the title or channel title) and of exclusions ('[]' skips either).
func searchSQL(fts string, tokens int, extra, order, outer string) string {
	text := `lower(` + fts + `.title || char(10) || ` + fts + `.channel_title)`
	return `
SELECT v.id, v.title, v.channel_title, st.last_seen_at, f.score, f.snip
FROM (
    SELECT rowid AS rid, rank AS score, snippet(` + fts + `, -1, ?5, ?6, ?7, ` + fmt.Sprint(tokens) + `) AS snip
    FROM ` + fts + `
    WHERE ` + fts + ` MATCH ?1 AND rowid >= ` + boundSQL(fts) + `
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

// The ranked search statements of the word index and of the trigram index,
// and fillSQL, the trigram fill-up of a word search, newest first, unranked:
// ?10 (the word-index expression of the exclusions, empty: none) replaces
// ?9, read once over the candidates' range.
var (
	wordSQL    = searchSQL("videos_fts", 16, "", "rank", "f.score, f.rid")
	trigramSQL = searchSQL("videos_tri", 24, "", "rank", "f.score, f.rid")
	fillSQL    = searchSQL("videos_tri", 24, `
      AND (?10 = '' OR rowid NOT IN (
            SELECT rowid FROM videos_fts WHERE videos_fts MATCH ?10 AND rowid >= `+boundSQL("videos_tri")+`))`,
		"rowid DESC", "f.rid DESC")
)

// SearchPage runs a full-text query (ParseSearch's syntax; the index that
// answers it: docs/design.md §6) and returns hits best first, and next: the
// Offset of the next page, or 0 when none. It stops when ctx is cancelled.
// Errors: *QueryError for bad text, limit or offset.
func (s *Store) SearchPage(ctx context.Context, q SearchQuery) (hits []Hit, next int, err error) {
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Limit < 0 || q.Limit > MaxSearchLimit {
		return nil, 0, &QueryError{Query: q.Text, Reason: fmt.Sprintf("limit %d not in 1..%d", q.Limit, MaxSearchLimit)}
	}
	if q.Offset < 0 || q.Offset >= MaxSearchLimit {
		return nil, 0, &QueryError{Query: q.Text, Reason: fmt.Sprintf("offset %d not in 0..%d", q.Offset, MaxSearchLimit-1)}
	}
	p := q.Parsed
	if p == nil {
		if p, err = ParseSearch(q.Text); err != nil {
			return nil, 0, err
		}
	}
	end := min(q.Offset+q.Limit, MaxSearchLimit)
	if s.pg { // one more hit: is there a next page?
		hits, err = searchPostgres(ctx, s.db, p.terms, q.Text, q.Region, end+1)
	} else {
		hits, err = s.searchSQLite(ctx, p.terms, q.Text, q.Region, end+1)
	}
	if err != nil {
		return nil, 0, err
	}
	if len(hits) > end {
		hits = hits[:end]
		if end < MaxSearchLimit {
			next = end
		}
	}
	hits = hits[min(q.Offset, len(hits)):]
	if len(hits) == 0 {
		return nil, 0, nil
	}
	var cjk [][]rune // highlights narrowed to the terms of unsegmented scripts
	for _, term := range slices.Concat(p.terms.and...) {
		if unsegmented(term.text) {
			cjk = append(cjk, []rune(term.text))
		}
	}
	for i := 0; i < len(hits) && len(cjk) > 0; i++ {
		hits[i].Highlights = markTerms(hits[i].Snippet, hits[i].Highlights, cjk)
	}
	if err := s.hitRegions(ctx, hits); err != nil {
		return nil, 0, err
	}
	return hits, next, nil
}

// searchSQLite returns the best limit hits of t (planSearch) on SQLite.
func (s *Store) searchSQLite(ctx context.Context, t terms, text, region string, limit int) ([]Hit, error) {
	// Match markers no stored text can contain: a random nonce per search.
	nonce := rand.Text()
	open, close := "\x02"+nonce+"\x03", "\x03"+nonce+"\x02"
	run := func(query, match, filter, exclude string, more ...any) ([]Hit, error) {
		args := []any{match, region, searchCandidates, limit, open, close, SnippetEllipsis, filter, exclude}
		var hits []Hit
		err := each(ctx, s.db, query, append(args, more...), func(rows *sql.Rows) error {
			var (
				h             Hit
				last, snippet sql.NullString
			)
			err := rows.Scan(&h.VideoID, &h.Title, &h.ChannelTitle, &last, &h.Score, &snippet)
			h.LastSeen = parseTime(last)
			h.Snippet, h.Highlights = unmark(snippet.String, open, close)
			hits = append(hits, h)
			return err
		})
		if err != nil {
			return nil, searchErr(text, err)
		}
		return hits, nil
	}
	words := func(w terms, allPrefix bool, subs []string) ([]Hit, error) {
		return run(wordSQL, renderMatch(w, allPrefix), "[]", jsonText(subs))
	}
	// Exclusions stay out of the trigram MATCH, where bm25 would count each
	// excluded phrase's rows over the whole index.
	substr := func(long [][]qterm, short [][]string, fill bool) ([]Hit, error) {
		match, filter := renderMatch(terms{and: long}, false), jsonText(short)
		if !fill {
			return run(trigramSQL, match, filter, jsonText(texts(t.not)))
		}
		var not string
		if len(t.not) > 0 {
			not = renderMatch(terms{and: [][]qterm{t.not}}, false)
		}
		return run(fillSQL, match, filter, "[]", not)
	}
	return planSearch(t, limit, words, substr)
}

// planSearch picks the index(es) that answer t (docs/design.md §6), for
// either engine: words searches the word index for w (allPrefix: every
// included term a prefix), subs excluded by substring; substr the trigram
// index for the long groups (trigramGroups), short ones checked by
// substring, ranked with t's exclusions checked by substring, or (fill)
// newest first without the word-index matches of the exclusions.
func planSearch(t terms, limit int, words func(w terms, allPrefix bool, subs []string) ([]Hit, error),
	substr func(long [][]qterm, short [][]string, fill bool) ([]Hit, error)) ([]Hit, error) {
	long, short := trigramGroups(t)
	if needsTrigram(t) {
		if len(long) > 0 {
			return substr(long, short, false)
		}
		w, subs := terms{and: t.and}, []string{} // exclusions the word index cannot split: by substring
		for _, q := range t.not {
			if unsegmented(q.text) {
				subs = append(subs, q.text)
			} else {
				w.not = append(w.not, q)
			}
		}
		return words(w, true, subs)
	}
	hits, err := words(t, false, []string{})
	if err != nil || len(hits) >= limit || len(long) == 0 {
		return hits, err
	}
	more, err := substr(long, short, true)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(hits)) // fill up with the videos not found yet
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

// markTerms narrows the highlights of snip to the terms: a highlight with
// an unsegmented character (a whole run of CJK text) gives way to the
// terms' occurrences anywhere, as written.
func markTerms(snip string, marks [][2]int, terms [][]rune) [][2]int {
	text := []rune(snip)
	out := [][2]int{}
	for _, m := range marks {
		if !unsegmented(string(text[m[0]:m[1]])) {
			out = append(out, m)
		}
	}
	return mergeMarks(append(out, occurrences(text, terms)...))
}

// occurrences returns the [start, end) offsets of every occurrence of each
// of terms in text.
func occurrences(text []rune, terms [][]rune) [][2]int {
	var out [][2]int
	for _, term := range terms {
		for i := 0; i+len(term) <= len(text); i++ {
			if slices.Equal(text[i:i+len(term)], term) {
				out = append(out, [2]int{i, i + len(term)})
			}
		}
	}
	return out
}

// mergeMarks sorts marks and merges those that overlap or touch ([] when none).
func mergeMarks(marks [][2]int) [][2]int {
	slices.SortFunc(marks, func(a, b [2]int) int { return cmp.Or(a[0]-b[0], a[1]-b[1]) })
	merged := [][2]int{}
	for _, m := range marks {
		if n := len(merged); n > 0 && m[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], m[1])
			continue
		}
		merged = append(merged, m)
	}
	return merged
}

func searchErr(text string, err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "fts5:"); i >= 0 {
		return &QueryError{Query: text, Reason: strings.TrimSpace(msg[i:])}
	}
	return fmt.Errorf("cannot search: %w", err)
}

// MarshalJSON writes h with the keys below ("last_seen" null if never
// captured, [] for no highlights or regions).
func (h Hit) MarshalJSON() ([]byte, error) {
	if h.Regions == nil {
		h.Regions = []HitRegion{}
	}
	if h.Highlights == nil {
		h.Highlights = [][2]int{}
	}
	return json.Marshal(struct {
		VideoID      string      `json:"video_id"`
		Title        string      `json:"title"`
		ChannelTitle string      `json:"channel_title"`
		Snippet      string      `json:"snippet"`
		Highlights   [][2]int    `json:"highlights"`
		Score        float64     `json:"score"`
		LastSeen     *time.Time  `json:"last_seen"`
		Regions      []HitRegion `json:"regions"`
	}{h.VideoID, h.Title, h.ChannelTitle, h.Snippet, h.Highlights, h.Score, jsonTime(h.LastSeen), h.Regions})
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

// needsTrigram reports whether an included term of q contains a character
// of an unsegmented script.
func needsTrigram(q terms) bool {
	return slices.ContainsFunc(slices.Concat(q.and...), func(t qterm) bool { return unsegmented(t.text) })
}

// unsegmented reports whether s contains a character of an unsegmented
// script.
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

// jsonText is v in JSON, for values that cannot fail to encode (strings,
// numbers, and slices, maps and structs of them).
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// trigramGroups splits q's AND-ed groups: long ones (every term of
// TrigramMinChars or more, looked up; a substring is found in every word it
// starts, so prefix is dropped) and the texts of short ones (checked by
// substring).
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
