package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
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
	// UnsegmentedCandidates bounds a lookup of a script written without spaces (CJK, Thai...:
	// the trigram index, or the word index's best-effort prefix): only its newest matches are
	// filtered and ranked, half of SearchCandidates. Its term is a substring of a title or
	// channel title, or the start of a run of that script, found once in nearly every match, so
	// the rank tells matches apart by little more than the column and the length of the text: a
	// larger pool reaches further back for hits of the same kind, at the rank's cost a match
	// (docs/design.md §6).
	UnsegmentedCandidates = SearchCandidates / 2
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
	// index only (bm25, or minus ts_rank_cd on PostgreSQL: docs/api.md; 0
	// for an unranked hit on SQLite: docs/design.md §6).
	Score float64
	// rowid is the video's in this store: hitRegions reads its chart ranks by it.
	rowid int64
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
// (dialect.hitEntries), newest capture last.
func (s *Store) hitRegions(ctx context.Context, hits []Hit) error {
	rowids := make([]any, len(hits))
	byRowid := make(map[int64]int, len(hits))
	for i := range hits {
		rowids[i] = hits[i].rowid
		byRowid[hits[i].rowid] = i
		hits[i].Regions = []HitRegion{}
	}
	err := each(ctx, s.db, `
WITH v (rowid) AS (VALUES `+valueRows(len(rowids), 1, 1)+`)
SELECT v.rowid, c.region, e.rank, c.captured_at
FROM v
JOIN `+s.d.hitEntries+`
JOIN captures c ON c.id = e.capture_id
WHERE c.kind = 'chart'
ORDER BY v.rowid, c.region, c.captured_at, c.id`, rowids, func(rows *sql.Rows) error {
		var (
			rowid  int64
			region string
			rank   int
			ts     sql.NullString
		)
		if err := rows.Scan(&rowid, &region, &rank, &ts); err != nil {
			return err
		}
		h := &hits[byRowid[rowid]]
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

// SearchPage runs a full-text query (ParseSearch's syntax; the index that answers it:
// docs/design.md §6) and returns hits best first, and next: the Offset of the next page, or 0 when
// none. It stops when ctx is cancelled. Errors: *QueryError for bad text, limit or offset.
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
	if hits, err = s.search(ctx, searchArgs{t: p.terms, text: q.Text, region: q.Region, limit: end + 1}); err != nil {
		return nil, 0, err // one more hit than the page: is there a next page?
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

// markTerms narrows the highlights of snip to the terms: a highlight with an unsegmented character
// (a whole run of CJK text) gives way to the terms' occurrences anywhere, as written.
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

// occurrences returns the [start, end) offsets of every occurrence of each of terms in text.
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

// search returns the best a.limit hits of a.t (planSearch) on s's engine.
func (s *Store) search(ctx context.Context, a searchArgs) ([]Hit, error) {
	x, err := s.d.searcher(ctx, s.db, a)
	if err != nil {
		return nil, err
	}
	return planSearch(a.t).run(ctx, x, a.limit)
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
