package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Capture is one chart, narrowed category chart or list of search hits
// fetched by a run (the captures table).
type Capture struct {
	// ID is the capture's integer id; RunID the run that fetched it.
	ID    int64 `json:"id"`
	RunID int64 `json:"run_id"`
	// Region is an ISO 3166-1 alpha-2 code, e.g. "US".
	Region string `json:"region"`
	// Kind and Query are as in Snapshot.
	Kind  string `json:"kind"`
	Query string `json:"query"`
	// CapturedAt is when its first page was stored (UTC).
	CapturedAt time.Time `json:"captured_at"`
	// Complete is false when the run stopped before the list's last page.
	Complete bool `json:"complete"`
}

// Entry is one position of a capture with the statistics of that moment.
type Entry struct {
	// Rank is 1-based.
	Rank         int    `json:"rank"`
	VideoID      string `json:"video_id"`
	Title        string `json:"title"`
	ChannelTitle string `json:"channel_title"`
	// Views, Likes and Comments are nil (JSON null) when unknown.
	Views    *int64 `json:"view_count"`
	Likes    *int64 `json:"like_count"`
	Comments *int64 `json:"comment_count"`
}

// CaptureQuery selects the capture CaptureAt returns.
type CaptureQuery struct {
	// Region is required (e.g. "US").
	Region string
	// Kind ("" is KindChart) and Query are as in Snapshot.
	Kind, Query string
	// RunID, when not 0, selects the capture of that run (At is ignored).
	RunID int64
	// At selects the capture in force at that time: the latest captured at
	// or before it. Zero means the latest.
	At time.Time
	// Partial makes At (or the latest) consider partial captures too (a
	// run still fetching, or stopped early); by default a chart in progress
	// is never the latest. RunID selects a capture whatever its state.
	Partial bool
}

// CaptureAt's statement: captureSQL, byRun or latest (picking one capture
// row, so SQLite reads entries in key order unsorted), byRank. A capture
// without entries is one row of NULL entry columns.
const (
	captureSQL = `
SELECT c.id, c.run_id, c.captured_at, c.complete, e.rank, v.id,
       coalesce(CASE WHEN e.text = v.text_version THEN v.title ELSE t.title END, ''),
       coalesce(CASE WHEN e.text = v.text_version THEN v.channel_title ELSE t.channel_title END, ''),
       e.view_count, e.like_count, e.comment_count
FROM captures c LEFT JOIN entries e ON e.capture_id = c.id
LEFT JOIN videos v ON v.rowid = e.video
LEFT JOIN video_texts t ON t.video = e.video AND t.version = e.text
WHERE `
	byRun  = `c.run_id = ? AND c.region = ? AND c.kind = ? AND c.query = ?`
	latest = `c.id = (SELECT id FROM captures
  WHERE region = ? AND kind = ? AND query = ? AND captured_at <= ? AND (complete = 1 OR ? = 1)
  ORDER BY captured_at DESC, id DESC LIMIT 1)`
	byRank = ` ORDER BY e.rank`
)

// CaptureAt returns the capture selected by q and its entries in rank order,
// read by one statement (one snapshot; an index probe and a range scan).
// Errors: an empty region or unknown kind; ErrNotFound (wrapped) when none.
func (s *Store) CaptureAt(ctx context.Context, q CaptureQuery) (Capture, []Entry, error) {
	if q.Kind == "" {
		q.Kind = KindChart
	}
	switch {
	case q.Region == "":
		return Capture{}, nil, errors.New("cannot read capture: empty region")
	case q.Kind != KindChart && q.Kind != KindCategory && q.Kind != KindSearch:
		return Capture{}, nil, fmt.Errorf("cannot read capture: unknown kind %q", q.Kind)
	}
	if !storable(q.Region) || !storable(q.Query) { // so no capture has it; PostgreSQL refuses it
		return Capture{}, nil, q.notFound()
	}
	query, args := captureSQL+byRun+byRank, []any{q.RunID, q.Region, q.Kind, q.Query}
	if q.RunID == 0 {
		at := "9999"
		if !q.At.IsZero() {
			at = fmtTime(q.At)
		}
		query = captureSQL + latest + byRank
		args = []any{q.Region, q.Kind, q.Query, at, q.Partial}
	}
	var (
		c          = Capture{Region: q.Region, Kind: q.Kind, Query: q.Query} // what the statement matches
		found      bool
		entries    = []Entry{}
		e          Entry
		ts, id     sql.NullString
		rank       sql.NullInt64
		vw, lk, cm sql.NullInt64
	)
	err := each(ctx, s.db, query, args, func(rows *sql.Rows) error {
		err := rows.Scan(&c.ID, &c.RunID, &ts, &c.Complete, &rank, &id, &e.Title, &e.ChannelTitle, &vw, &lk, &cm)
		if found = true; err == nil && rank.Valid {
			e.Rank, e.VideoID = int(rank.Int64), id.String
			e.Views, e.Likes, e.Comments = intPtr(vw), intPtr(lk), intPtr(cm)
			entries = append(entries, e)
		}
		return err
	})
	if err != nil {
		return Capture{}, nil, fmt.Errorf("cannot read capture: %w", err)
	}
	if c.CapturedAt = parseTime(ts); !found {
		return Capture{}, nil, q.notFound()
	}
	return c, entries, nil
}

// notFound is the error of no capture q selects (wraps ErrNotFound).
func (q CaptureQuery) notFound() error {
	what, of := "complete ", ""
	if q.Partial || q.RunID != 0 {
		what = ""
	}
	if q.RunID != 0 {
		of = fmt.Sprintf(" by run %d", q.RunID)
	}
	return fmt.Errorf("no %s%s capture of %s%s: %w", what, q.Kind, q.Region, of, ErrNotFound)
}

// storable reports whether s is text both engines store: valid UTF-8
// without U+0000 (PostgreSQL's text holds neither).
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// Statistics point sources (StatsPoint.Source): an entry of a chart or
// category chart capture, of a search capture, or a stats sample.
const (
	SourceChart  = "chart"
	SourceSearch = "search"
	SourceStats  = "stats"
)

// Appearance is one capture a video was in.
type Appearance struct {
	CaptureID  int64     `json:"capture_id"`
	RunID      int64     `json:"run_id"`
	Region     string    `json:"region"`
	Kind       string    `json:"kind"`
	Query      string    `json:"query"`
	CapturedAt time.Time `json:"captured_at"`
	Rank       int       `json:"rank"`
	Complete   bool      `json:"complete"`
	// Views, Likes and Comments are the entry's statistics (nil: unknown).
	Views    *int64 `json:"view_count"`
	Likes    *int64 `json:"like_count"`
	Comments *int64 `json:"comment_count"`
}

// StatsPoint is the statistics of a video at one time; nil is unknown.
type StatsPoint struct {
	At       time.Time `json:"at"`
	Views    *int64    `json:"view_count"`
	Likes    *int64    `json:"like_count"`
	Comments *int64    `json:"comment_count"`
	// Source is SourceChart, SourceSearch or SourceStats.
	Source string `json:"source"`
	// Region is the capture's region; "" for a stats sample.
	Region string `json:"region"`
}

// RegionSummary is a video's time on one region's chart (kind chart only;
// category charts and search hits are not counted).
type RegionSummary struct {
	Region string `json:"region"`
	// FirstAt and LastAt are its first and last chart capture times.
	FirstAt time.Time `json:"first_at"`
	LastAt  time.Time `json:"last_at"`
	// BestRank is its highest position (lowest number); LastRank its
	// position in the last chart capture it was in.
	BestRank int `json:"best_rank"`
	LastRank int `json:"last_rank"`
	// Days is the number of distinct UTC days with a chart capture it was in.
	Days int `json:"days"`
}

// VideoHistory is a stored video with everything recorded about it.
type VideoHistory struct {
	Video StoredVideo `json:"video"`
	// Appearances is every capture the video was in, oldest first.
	Appearances []Appearance `json:"appearances"`
	// Points is every statistics point (entries with at least one known
	// statistic, and stats samples), oldest first.
	Points []StatsPoint `json:"points"`
	// Regions summarises chart appearances per region, by region code.
	Regions []RegionSummary `json:"regions"`
	// Titles is the video's title from each change on, oldest first: the
	// first captured title, then each different one (text as captured).
	Titles []TitleChange `json:"titles"`
	// Changes are YouTube's Changes between its first and last appearance
	// or point: its series are not comparable as-is across them.
	Changes []Change `json:"changes"`
}

// TitleChange is a title a video had from At (the first capture that
// showed it, UTC) until the next change.
type TitleChange struct {
	At    time.Time `json:"at"`
	Title string    `json:"title"`
}

// History returns the video with the given id and its history (index
// lookups only); an unknown id wraps ErrNotFound.
func (s *Store) History(ctx context.Context, id string) (VideoHistory, error) {
	v, err := s.Video(ctx, id)
	if err != nil {
		return VideoHistory{}, err
	}
	h := VideoHistory{Video: v, Appearances: []Appearance{}, Points: []StatsPoint{}, Regions: []RegionSummary{}}
	if err := s.readAppearances(ctx, id, &h); err != nil {
		return VideoHistory{}, fmt.Errorf("cannot read history of %s: %w", id, err)
	}
	if h.Titles, err = s.titleChanges(ctx, id); err != nil {
		return VideoHistory{}, fmt.Errorf("cannot read titles of %s: %w", id, err)
	}
	if err := s.readSamples(ctx, id, &h); err != nil {
		return VideoHistory{}, fmt.Errorf("cannot read stats samples of %s: %w", id, err)
	}
	slices.SortStableFunc(h.Points, func(a, b StatsPoint) int { return a.At.Compare(b.At) })
	h.Changes = h.changesCrossed()
	return h, nil
}

// readAppearances adds to h every capture video id was in, oldest first,
// with the statistics points and the chart regions' summaries they make.
func (s *Store) readAppearances(ctx context.Context, id string, h *VideoHistory) error {
	err := each(ctx, s.db, `
SELECT c.id, c.run_id, c.region, c.kind, c.query, c.captured_at, c.complete,
       e.rank, e.view_count, e.like_count, e.comment_count
FROM videos v
JOIN entries e ON `+s.d.onVideo("v.rowid")+`
JOIN captures c ON c.id = e.capture_id
WHERE v.id = ?
ORDER BY c.captured_at, c.id`, []any{id}, func(rows *sql.Rows) error {
		var (
			a          Appearance
			ts         sql.NullString
			vw, lk, cm sql.NullInt64
		)
		if err := rows.Scan(&a.CaptureID, &a.RunID, &a.Region, &a.Kind, &a.Query, &ts, &a.Complete,
			&a.Rank, &vw, &lk, &cm); err != nil {
			return err
		}
		a.CapturedAt = parseTime(ts)
		a.Views, a.Likes, a.Comments = intPtr(vw), intPtr(lk), intPtr(cm)
		h.addAppearance(a)
		return nil
	})
	slices.SortFunc(h.Regions, func(a, b RegionSummary) int { return strings.Compare(a.Region, b.Region) })
	return err
}

// addAppearance appends a (the next in time order) to h's appearances, to its points when it has a
// statistic, and to its region's summary when a chart's.
func (h *VideoHistory) addAppearance(a Appearance) {
	h.Appearances = append(h.Appearances, a)
	if a.Views != nil || a.Likes != nil || a.Comments != nil {
		src := SourceChart
		if a.Kind == KindSearch {
			src = SourceSearch
		}
		h.Points = append(h.Points, StatsPoint{At: a.CapturedAt, Views: a.Views, Likes: a.Likes,
			Comments: a.Comments, Source: src, Region: a.Region})
	}
	if a.Kind != KindChart {
		return
	}
	i := slices.IndexFunc(h.Regions, func(r RegionSummary) bool { return r.Region == a.Region })
	if i < 0 {
		i = len(h.Regions)
		h.Regions = append(h.Regions, RegionSummary{Region: a.Region, FirstAt: a.CapturedAt, BestRank: a.Rank})
	}
	r, day := &h.Regions[i], a.CapturedAt.Format(time.DateOnly)
	if r.Days == 0 || r.LastAt.Format(time.DateOnly) != day { // appearances come in time order
		r.Days++
	}
	r.LastAt, r.LastRank = a.CapturedAt, a.Rank
	r.BestRank = min(r.BestRank, a.Rank)
}

// titleChanges is video id's title from each change on: its superseded
// text versions and the current one, in version order, each kept only
// when its title differs from the one before (else another field changed).
func (s *Store) titleChanges(ctx context.Context, id string) ([]TitleChange, error) {
	titles := []TitleChange{}
	err := each(ctx, s.db, `
SELECT t.version, t.title, coalesce(t.since, v.first_seen_at)
FROM videos v JOIN video_texts t ON t.video = v.rowid WHERE v.id = ?1
UNION ALL
SELECT v.text_version, v.title, coalesce(v.text_since, v.first_seen_at) FROM videos v WHERE v.id = ?1
ORDER BY 1`, []any{id}, func(rows *sql.Rows) error {
		var (
			version int64
			c       TitleChange
			ts      sql.NullString
		)
		if err := rows.Scan(&version, &c.Title, &ts); err != nil {
			return err
		}
		if n := len(titles); n == 0 || titles[n-1].Title != c.Title {
			c.At = parseTime(ts)
			titles = append(titles, c)
		}
		return nil
	})
	return titles, err
}

// readSamples adds video id's stats samples to h's points.
func (s *Store) readSamples(ctx context.Context, id string, h *VideoHistory) error {
	return each(ctx, s.db, `
SELECT x.sampled_at, x.view_count, x.like_count, x.comment_count
FROM videos v JOIN stats_samples x ON x.video = v.rowid
WHERE v.id = ? ORDER BY x.sampled_at`, []any{id}, func(rows *sql.Rows) error {
		var (
			ts         sql.NullString
			vw, lk, cm sql.NullInt64
		)
		err := rows.Scan(&ts, &vw, &lk, &cm)
		h.Points = append(h.Points, StatsPoint{At: parseTime(ts), Views: intPtr(vw), Likes: intPtr(lk),
			Comments: intPtr(cm), Source: SourceStats})
		return err
	})
}

// changesCrossed is the Changes between h's first and last appearance or point ([] without either).
func (h *VideoHistory) changesCrossed() []Change {
	span := make([]time.Time, 0, len(h.Appearances)+len(h.Points))
	for _, a := range h.Appearances {
		span = append(span, a.CapturedAt)
	}
	for _, p := range h.Points {
		span = append(span, p.At)
	}
	if len(span) == 0 {
		return []Change{}
	}
	return ChangesCrossed(slices.MinFunc(span, time.Time.Compare), slices.MaxFunc(span, time.Time.Compare))
}

// MarshalJSON encodes the video with the keys below, null for unknown.
func (v StoredVideo) MarshalJSON() ([]byte, error) {
	tags := v.Tags
	if tags == nil {
		tags = []string{}
	}
	return json.Marshal(struct {
		ID           string     `json:"id"`
		Title        string     `json:"title"`
		Description  string     `json:"description"`
		ChannelID    string     `json:"channel_id"`
		ChannelTitle string     `json:"channel_title"`
		CategoryID   string     `json:"category_id"`
		Tags         []string   `json:"tags"`
		PublishedAt  *time.Time `json:"published_at"`
		Duration     *string    `json:"duration"`
		Views        *int64     `json:"view_count"`
		Likes        *int64     `json:"like_count"`
		Comments     *int64     `json:"comment_count"`
		ThumbnailURL string     `json:"thumbnail_url"`
		FirstSeen    *time.Time `json:"first_seen_at"`
		LastSeen     *time.Time `json:"last_seen_at"`
	}{v.ID, v.Title, v.Description, v.ChannelID, v.ChannelTitle, v.CategoryID, tags,
		jsonTime(v.PublishedAt), strPtr(v.Duration), v.Views, v.Likes, v.Comments, v.ThumbnailURL,
		jsonTime(v.FirstSeen), jsonTime(v.LastSeen)})
}

// Change is a change YouTube made to what its numbers or charts mean: a
// series that crosses Date is not comparable as-is (docs/design.md §3).
type Change struct {
	// Date is the day it took effect (YYYY-MM-DD; from 00:00 UTC).
	Date string `json:"date"`
	// Affects is the export column it changes: view_count, rank, or
	// dislike_count (which trendfetch never receives).
	Affects string `json:"affects"`
	// Summary says what changed, in a few words.
	Summary string `json:"summary"`
	// Source is where YouTube announced it.
	Source string `json:"source"`
}

// Changes are YouTube's changes, oldest first: declared here once; `video`,
// the read API (and so the dashboard) and the exports' metadata read them.
var Changes = []Change{
	{"2021-12-13", "dislike_count", "dislike counts hidden (statistics.dislikeCount private)",
		"https://developers.google.com/youtube/v3/revision_history#november-17,-2021"},
	{"2025-03-31", "view_count", "Shorts views counted at playback start",
		"https://developers.google.com/youtube/v3/revision_history#march-26,-2025"},
	{"2025-07-21", "rank", "mostPopular built from the Trending Music, Movies and Gaming charts",
		"https://developers.google.com/youtube/v3/revision_history#july-10,-2025"},
	{"2026-08-27", "view_count", "views of every format counted at playback start",
		"https://developers.google.com/youtube/v3/revision_history"},
}

// At is when c took effect (00:00 UTC of Date).
func (c Change) At() time.Time {
	t, _ := time.Parse(time.DateOnly, c.Date)
	return t
}

// ChangesCrossed returns the Changes a series from first to last crosses:
// those that took effect after first and at or before last ([] when none).
func ChangesCrossed(first, last time.Time) []Change {
	out := []Change{}
	for _, c := range Changes {
		if at := c.At(); at.After(first) && !at.After(last) {
			out = append(out, c)
		}
	}
	return out
}

// ChangeInEffect returns the latest Change in effect at t, nil before the
// first (JSON Lines exports' youtube_change).
func ChangeInEffect(t time.Time) *Change {
	var in *Change
	for i := range Changes {
		if !Changes[i].At().After(t) {
			in = &Changes[i]
		}
	}
	return in
}
