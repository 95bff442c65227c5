package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"golang.org/x/text/unicode/norm"
)

// Search on PostgreSQL (docs/design.md §10a): search_plan.go's lookups and
// bounds over video_search (tsquery lexemes; LIKE under pg_trgm).

// pgRank is ts_rank_cd's weights {D, C, B, A}: description, tags, channel title, title.
const pgRank = `'{0.1, 0.2, 0.3, 1.0}'`

// pgTerm is one query term as the PostgreSQL indexes see it.
type pgTerm struct {
	words  []string // its lexemes (search_tokens' cut), in order
	folded string   // search_fold of its text
}

// pgSearch is one search statement being built: the search's folded terms
// (pgFold), region, limit and candidates (the lookup's), and the statement's arguments.
type pgSearch struct {
	f          map[string]pgTerm
	region     string
	limit      int
	candidates int
	args       []any
}

// arg adds a statement argument and returns its placeholder.
func (p *pgSearch) arg(v any) string {
	p.args = append(p.args, v)
	return fmt.Sprintf("$%d", len(p.args))
}

// pgFold cuts and folds the texts of t's terms: by foldPlain, else in one round trip by the SQL
// functions that cut the stored text.
func pgFold(ctx context.Context, db *sql.DB, t terms) (map[string]pgTerm, error) {
	out := map[string]pgTerm{}
	var rest []string
	for _, x := range texts(append(slices.Concat(t.and...), t.not...)) {
		if f, ok := foldPlain(x); ok {
			out[x] = f
		} else {
			rest = append(rest, x)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	return out, foldSQL(ctx, db, rest, out)
}

// foldPlain is a text's pgTerm when each of its characters is an ASCII letter, digit or space,
// a kana or a unified Han ideograph: search_fold only lower-cases those, search_tokens cuts
// at the spaces (TestFoldPlain compares it with them).
func foldPlain(x string) (pgTerm, bool) {
	for _, r := range x {
		if !(r < utf8.RuneSelf && (r == ' ' || wordChar(r)) || kanaOrHan(r)) {
			return pgTerm{}, false
		}
	}
	folded := strings.ToLower(x)
	return pgTerm{words: strings.Fields(folded), folded: folded}, true
}

// kanaOrHan is whether r is a kana or a unified Han ideograph: search_fold keeps it as it is.
func kanaOrHan(r rune) bool {
	return 0x3041 <= r && r <= 0x3096 || 0x30A1 <= r && r <= 0x30FA || r == 0x30FC || 0x4E00 <= r && r <= 0x9FFF
}

// foldSQL cuts and folds xs into out by the SQL functions.
func foldSQL(ctx context.Context, db *sql.DB, xs []string, out map[string]pgTerm) error {
	return each(ctx, db, `
SELECT x, search_fold(x), coalesce((SELECT string_agg(word, ' ' ORDER BY n) FROM search_tokens(x)), '')
FROM jsonb_array_elements_text($1::jsonb) AS u(x)`, []any{jsonText(xs)}, func(rows *sql.Rows) error {
		var x, folded, words string
		err := rows.Scan(&x, &folded, &words)
		out[x] = pgTerm{words: strings.Fields(words), folded: folded}
		return err
	})
}

// tsquery writes t as tsquery text (allPrefix: every included term a prefix), a phrase's words
// joined by near (" <-> ": in order; " & ": anywhere); a term without words matches nothing.
func tsquery(t terms, f map[string]pgTerm, allPrefix bool, near string) string {
	term := func(q qterm, prefix bool) string {
		ws := f[q.text].words
		if len(ws) == 0 {
			return `' '` // no stored lexeme holds a space
		}
		parts := make([]string, len(ws))
		for i, w := range ws {
			parts[i] = "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(w) + "'"
		}
		if prefix {
			parts[len(parts)-1] += ":*"
		}
		return "(" + strings.Join(parts, near) + ")"
	}
	var and []string
	for _, g := range t.and {
		var or []string
		for _, q := range g {
			or = append(or, term(q, q.prefix || allPrefix))
		}
		and = append(and, "("+strings.Join(or, " | ")+")")
	}
	for _, q := range t.not {
		and = append(and, "!"+term(q, q.prefix))
	}
	return strings.Join(and, " & ")
}

// likeEscaper escapes LIKE's wildcards.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// pgRaw is the text short terms and exclusions are checked against, as on
// SQLite: title and channel title, only ASCII lower-cased.
const pgRaw = `lower((v.title || E'\n' || v.channel_title) COLLATE "C")`

// conds are searchSQL's ?2, ?8 and ?9 conditions on a candidate c, and the join to
// videos v their substring checks need ("" when none).
func (p *pgSearch) conds(groups [][]string, exclude []string) (join, where string) {
	var b strings.Builder
	if p.region != "" {
		b.WriteString(` AND EXISTS (SELECT 1 FROM entries e JOIN captures cp ON cp.id = e.capture_id
            WHERE ` + pgDialect.onVideo("c.video_rowid") + ` AND cp.region = ` + p.arg(p.region) + `)`)
	}
	for _, g := range groups {
		var or []string
		for _, s := range g {
			or = append(or, `strpos(`+pgRaw+`, lower(`+p.arg(s)+` COLLATE "C")) > 0`)
		}
		b.WriteString(" AND (" + strings.Join(or, " OR ") + ")")
	}
	for _, s := range exclude {
		b.WriteString(` AND strpos(` + pgRaw + `, lower(` + p.arg(s) + ` COLLATE "C")) = 0`)
	}
	if len(groups)+len(exclude) > 0 {
		join = ` JOIN videos v ON v.rowid = c.video_rowid`
	}
	return join, b.String()
}

// ranked is a search statement: the p.candidates newest cands (video_rowid, score and what
// where needs) filtered by join and where, ordered by score then rowid in order (ranked false:
// newest first), the first limit joined to their videos: only the winners are joined. Scored
// as they are read, the candidates are sorted without their tsvector (twice as fast).
func (p *pgSearch) ranked(cands, order string, ranked bool, join, where string) string {
	order = `c.score, c.video_rowid ` + order
	if !ranked {
		order = `c.video_rowid DESC`
	}
	outer := strings.ReplaceAll(order, "c.", "r.")
	return `
SELECT v.rowid, v.id, v.title, v.channel_title, st.last_seen_at, r.score, v.tags, v.description
FROM (
    SELECT c.video_rowid, c.score
    FROM (` + cands + `
          ORDER BY video_rowid DESC LIMIT ` + p.arg(p.candidates) + `) c` + join + `
    WHERE TRUE` + where + `
    ORDER BY ` + order + ` LIMIT ` + p.arg(p.limit) + `) r
JOIN videos v ON v.rowid = r.video_rowid
LEFT JOIN video_stats st ON st.video_rowid = r.video_rowid
ORDER BY ` + outer
}

// wordSQL is l's search, tsquery q: ranked by ts_rank_cd; l.newest: newest first, score 0;
// l.allPrefix (a best-effort prefix lookup of an unsegmented script): by where its terms occur
// as substrings (substrScore), newest first within.
func (p *pgSearch) wordSQL(q string, l wordLookup) string {
	tq := p.arg(q) + `::tsquery`
	join, where := p.conds(nil, l.subs)
	score, order := `-ts_rank_cd(`+pgRank+`, s.doc, `+tq+`)::float8`, "ASC"
	switch {
	case l.newest:
		score = `0::float8`
	case l.allPrefix:
		score, order = p.substrScore(l.terms.and), "DESC"
	}
	return p.ranked(`SELECT s.video_rowid, `+score+` AS score
          FROM video_search s WHERE s.doc @@ `+tq, order, !l.newest, join, where)
}

// substrScore is the score of a candidate s by where each term of groups occurs in its folded
// title and channel title (s.tri): 10 a term in the title, 3 in the channel title, negated
// (ranked ascending). It reads no tsvector: ranking a best-effort prefix with ts_rank_cd cost
// more than finding it (docs/scale.md).
func (p *pgSearch) substrScore(groups [][]qterm) string {
	var score []string
	for _, q := range slices.Concat(groups...) {
		a := p.arg(p.f[q.text].folded)
		score = append(score, `CASE WHEN strpos(split_part(s.tri, E'\n', 1), `+a+`) > 0 THEN 10
                 WHEN strpos(s.tri, `+a+`) > 0 THEN 3 ELSE 0 END`)
	}
	return `-(` + strings.Join(score, " + ") + `)::float8`
}

// substrSQL is the substring search of the long groups (folded), short ones and exclusions not
// checked by substring: ranked by substrScore, or (fill) newest first without the videos the
// exclusions' words match.
func (p *pgSearch) substrSQL(long [][]qterm, short [][]string, not []qterm, fill bool) string {
	var match []string
	for _, g := range long {
		var or []string
		for _, q := range g {
			or = append(or, `s.tri LIKE `+p.arg("%"+likeEscaper.Replace(p.f[q.text].folded)+"%"))
		}
		match = append(match, "("+strings.Join(or, " OR ")+")")
	}
	score := p.substrScore(long)
	exclude := texts(not)
	if fill {
		exclude = nil
	}
	join, where := p.conds(short, exclude)
	doc := ""
	if fill && len(not) > 0 {
		doc = ", s.doc"
		where += ` AND NOT c.doc @@ ` + p.arg(tsquery(terms{and: [][]qterm{not}}, p.f, false, " <-> ")) + `::tsquery`
	}
	return p.ranked(`SELECT s.video_rowid, `+score+` AS score`+doc+`
          FROM video_search s WHERE `+strings.Join(match, " AND "), "DESC", !fill, join, where)
}

// pgSearcher runs a plan's lookups on video_search; each hit has the
// snippet of its best column (of the words, else of the folded substrings).
type pgSearcher struct {
	db *sql.DB
	a  searchArgs
	f  map[string]pgTerm
}

// newPGSearcher folds the search's terms first (one round trip).
func newPGSearcher(ctx context.Context, db *sql.DB, a searchArgs) (searcher, error) {
	f, err := pgFold(ctx, db, a.t)
	if err != nil {
		return nil, searchErr(a.text, err)
	}
	return &pgSearcher{db: db, a: a, f: f}, nil
}

func (x *pgSearcher) words(ctx context.Context, l wordLookup) ([]Hit, error) {
	p := pgSearch{f: x.f, region: x.a.region, limit: x.a.limit, candidates: l.candidates()}
	return x.query(ctx, &p, p.wordSQL(tsquery(l.terms, x.f, l.allPrefix, " <-> "), l), true)
}

// common counts the newest videos holding l's included words up to the first past the bound.
func (x *pgSearcher) common(ctx context.Context, l wordLookup) (bool, error) {
	q := tsquery(terms{and: l.terms.and}, x.f, l.allPrefix, " & ")
	var common bool
	err := x.db.QueryRowContext(ctx, pgCommonSQL, pgx.QueryExecModeCacheDescribe, q, searchCandidates).Scan(&common)
	if err != nil {
		return false, searchErr(x.a.text, err)
	}
	return common, nil
}

// pgCommonSQL reports whether tsquery $1 matches more than $2 of the 2 x $2 newest videos (rowids
// have gaps: counted by row), reading them newest first up to the match past $2 (5-13 ms at 200k
// videos; a bound on rowid found first, for an index lookup, was no faster).
const pgCommonSQL = `SELECT count(*) > $2 FROM (
    SELECT FROM (SELECT doc FROM video_search ORDER BY video_rowid DESC LIMIT 2 * $2) n
    WHERE doc @@ $1::tsquery LIMIT $2 + 1) c`

func (x *pgSearcher) substrings(ctx context.Context, l substrLookup) ([]Hit, error) {
	p := pgSearch{f: x.f, region: x.a.region, limit: x.a.limit, candidates: l.candidates()}
	return x.query(ctx, &p, p.substrSQL(l.long, l.short, l.not, l.fill), false)
}

// query runs p's statement; words: snippets of words, else of substrings.
// Planned for its arguments every time: a generic plan (used after five
// runs) cannot tell rare terms from common ones nor use pg_trgm.
func (x *pgSearcher) query(ctx context.Context, p *pgSearch, query string, words bool) ([]Hit, error) {
	var hits []Hit
	err := each(ctx, x.db, query, append([]any{pgx.QueryExecModeCacheDescribe}, p.args...), func(rows *sql.Rows) error {
		var (
			h                 Hit
			last              sql.NullString
			tags, description string
		)
		if err := rows.Scan(&h.rowid, &h.VideoID, &h.Title, &h.ChannelTitle, &last, &h.Score, &tags, &description); err != nil {
			return err
		}
		h.LastSeen = parseTime(last)
		if words {
			h.Snippet, h.Highlights = wordSnippet([]string{h.Title, tags, h.ChannelTitle, description}, x.a.t, x.f, 16)
		} else {
			h.Snippet, h.Highlights = substrSnippet([]string{h.Title, h.ChannelTitle}, x.a.t, x.f, 64)
		}
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return nil, searchErr(x.a.text, err)
	}
	return hits, nil
}

// foldRune is r as search_fold compares it: lower case, a diacritic
// (U+0300-U+036F after NFD) removed, other decompositions kept whole. It
// allocates nothing: snippets fold every character of each hit's columns.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf { // ASCII: no decomposition to look up
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	if kanaOrHan(r) { // nothing to look up either
		return r
	}
	r = unicode.ToLower(r)
	var b [utf8.UTFMax]byte
	d := norm.NFD.Properties(b[:utf8.EncodeRune(b[:], r)]).Decomposition()
	if d == nil {
		return r
	}
	first, n := utf8.DecodeRune(d)
	for _, m := range string(d[n:]) {
		if m < 0x300 || m > 0x36f {
			return r
		}
	}
	return first
}

// wordChar is (nearly) a character search_tokens keeps in words.
func wordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) || r >= 0x1F900
}

// wordSnippet is up to tokens words of the column of cols with most words
// of t, from shortly before its first match, matches highlighted.
func wordSnippet(cols []string, t terms, f map[string]pgTerm, tokens int) (string, [][2]int) {
	match := snippetMatcher(t, f)
	best, most := 0, -1
	for ci, col := range cols {
		if n := columnMatches(col, match); n > most {
			best, most = ci, n
		}
	}
	words, marks := columnWords(cols[best], match)
	if len(words) == 0 {
		return "", [][2]int{}
	}
	first := 0
	if len(marks) > 0 {
		first = slices.Index(words, marks[0])
	}
	from := max(0, min(first-tokens/4, len(words)-tokens))
	to := min(len(words), from+tokens)
	rs := []rune(cols[best])
	start, end := 0, len(rs)
	if from > 0 {
		start = words[from][0]
	}
	if to < len(words) {
		end = words[to-1][1]
	}
	return window(rs, start, end, marks)
}

// wordMatcher is the folded words a snippet highlights, and those it highlights as prefixes;
// ascii: one of them is all ASCII (a word folded from ASCII is: else no ASCII text matches).
type wordMatcher struct {
	want, prefixes []string
	ascii          bool
}

// match reports whether folded word w matches (w does not escape: no copy is allocated).
func (m wordMatcher) match(w string) bool {
	if slices.Contains(m.want, w) {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// snippetMatcher is the wordMatcher of t's words (f: their folded words), the last word of a
// prefix term as a prefix.
func snippetMatcher(t terms, f map[string]pgTerm) wordMatcher {
	var want, prefixes []string
	for _, q := range slices.Concat(t.and...) {
		for i, w := range f[q.text].words {
			if q.prefix && i == len(f[q.text].words)-1 {
				prefixes = append(prefixes, w)
			} else {
				want = append(want, w)
			}
		}
	}
	return wordMatcher{want: want, prefixes: prefixes, ascii: slices.ContainsFunc(slices.Concat(want, prefixes), allASCII)}
}

// columnMatches counts the words of col that m matches (none in ASCII text when m has no ASCII
// word), without keeping them.
func columnMatches(col string, m wordMatcher) int {
	if !m.ascii && allASCII(col) {
		return 0
	}
	n, sc := 0, wordScanner{col: col}
	for _, _, folded, ok := sc.next(); ok; _, _, folded, ok = sc.next() {
		if m.match(string(folded)) {
			n++
		}
	}
	return n
}

// columnWords is the words of col and those m matches, as rune offsets.
func columnWords(col string, m wordMatcher) (words, marks [][2]int) {
	sc := wordScanner{col: col}
	for start, end, folded, ok := sc.next(); ok; start, end, folded, ok = sc.next() {
		words = append(words, [2]int{start, end})
		if m.match(string(folded)) {
			marks = append(marks, [2]int{start, end})
		}
	}
	return words, marks
}

// wordScanner reads the words of col (runs of wordChar) in place.
type wordScanner struct {
	col   string
	i, at int // bytes and runes read
	buf   [64]byte
}

// next is the next word's start and end as rune offsets and its folded form, UTF-8, valid until
// the next call; ok false after the last.
func (w *wordScanner) next() (start, end int, folded []byte, ok bool) {
	for w.i < len(w.col) {
		r, size := utf8.DecodeRuneInString(w.col[w.i:])
		if !wordChar(r) {
			w.i, w.at = w.i+size, w.at+1
			continue
		}
		start, folded = w.at, w.buf[:0]
		for ; wordChar(r); r, size = utf8.DecodeRuneInString(w.col[w.i:]) {
			folded = utf8.AppendRune(folded, foldRune(r))
			if w.i, w.at = w.i+size, w.at+1; w.i == len(w.col) {
				break
			}
		}
		return start, w.at, folded, true
	}
	return 0, 0, nil, false
}

// allASCII reports whether s holds only ASCII characters.
func allASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf })
}

// window is rs[start:end] with SnippetEllipsis where cut, and the marks
// inside it at their offsets in the result ([] when none).
func window(rs []rune, start, end int, marks [][2]int) (string, [][2]int) {
	prefix, suffix := "", ""
	if start > 0 {
		prefix = SnippetEllipsis
	}
	if end < len(rs) {
		suffix = SnippetEllipsis
	}
	off := utf8.RuneCountInString(prefix) - start
	in := [][2]int{}
	for _, m := range marks {
		if m[0] >= start && m[1] <= end {
			in = append(in, [2]int{m[0] + off, m[1] + off})
		}
	}
	return prefix + string(rs[start:end]) + suffix, in
}

// substrSnippet is up to chars characters of the column of cols holding t's
// folded terms (else the first), every occurrence highlighted.
func substrSnippet(cols []string, t terms, f map[string]pgTerm, chars int) (string, [][2]int) {
	var subs [][]rune
	for _, q := range slices.Concat(t.and...) {
		if s := []rune(f[q.text].folded); len(s) > 0 {
			subs = append(subs, s)
		}
	}
	find := func(col string) [][2]int {
		rs := []rune(col)
		folded := make([]rune, len(rs))
		for i, r := range rs {
			folded[i] = foldRune(r)
		}
		return occurrences(folded, subs)
	}
	col, marks := cols[0], find(cols[0])
	if len(marks) == 0 {
		if m := find(cols[1]); len(m) > 0 {
			col, marks = cols[1], m
		}
	}
	rs := []rune(col)
	from := 0
	if len(marks) > 0 {
		from = slices.MinFunc(marks, func(a, b [2]int) int { return a[0] - b[0] })[0]
		from = max(0, min(from-chars/4, len(rs)-chars))
	}
	snip, in := window(rs, from, min(len(rs), from+chars), marks)
	return snip, mergeMarks(in)
}
