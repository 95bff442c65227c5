package store

import (
	"encoding/json"
	"time"
)

// jsonTime is t in UTC, or nil (JSON null) for the zero time.
func jsonTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// MarshalJSON writes r as {"id", "credential", "region", "started_at",
// "finished_at" (null while running or when abandoned), "duration_ms"
// (null when unfinished), "pages", "videos", "units" (bucket to units),
// "calls" (method to calls), "unmetered", "outcome", "reason" (null when
// none), "retry_after_ms" and "retry_at" (null unless denied), "pid",
// "host"}.
func (r Run) MarshalJSON() ([]byte, error) {
	var dur, retryMS *int64
	if !r.FinishedAt.IsZero() && !r.StartedAt.IsZero() {
		d := r.FinishedAt.Sub(r.StartedAt).Milliseconds()
		dur = &d
	}
	if r.RetryAfter > 0 {
		ms := r.RetryAfter.Milliseconds()
		retryMS = &ms
	}
	var reason *string
	if r.Reason != "" {
		reason = &r.Reason
	}
	units, calls := r.Units, r.Calls
	if units == nil {
		units = map[string]int64{}
	}
	if calls == nil {
		calls = map[string]int{}
	}
	return json.Marshal(struct {
		ID           int64            `json:"id"`
		Credential   string           `json:"credential"`
		Region       string           `json:"region"`
		StartedAt    *time.Time       `json:"started_at"`
		FinishedAt   *time.Time       `json:"finished_at"`
		DurationMS   *int64           `json:"duration_ms"`
		Pages        int              `json:"pages"`
		Videos       int              `json:"videos"`
		Units        map[string]int64 `json:"units"`
		Calls        map[string]int   `json:"calls"`
		Unmetered    int              `json:"unmetered"`
		Outcome      Outcome          `json:"outcome"`
		Reason       *string          `json:"reason"`
		RetryAfterMS *int64           `json:"retry_after_ms"`
		RetryAt      *time.Time       `json:"retry_at"`
		PID          int              `json:"pid"`
		Host         string           `json:"host"`
	}{r.ID, r.Credential, r.Region, jsonTime(r.StartedAt), jsonTime(r.FinishedAt), dur, r.Pages, r.Videos,
		units, calls, r.Unmetered, r.Outcome, reason, retryMS, jsonTime(r.RetryAt), r.PID, r.Host})
}

// hitJSON is the machine shape of a Hit.
type hitJSON struct {
	VideoID      string      `json:"video_id"`
	Title        string      `json:"title"`
	ChannelTitle string      `json:"channel_title"`
	Snippet      string      `json:"snippet"`
	Highlights   [][2]int    `json:"highlights"`
	Score        float64     `json:"score"`
	LastSeen     *time.Time  `json:"last_seen"`
	Regions      []HitRegion `json:"regions"`
}

// MarshalJSON writes h as {"video_id", "title", "channel_title",
// "snippet", "highlights" ([[start, end], ...] in code points of snippet),
// "score" (bm25, lower is better), "last_seen" (null if never
// captured), "regions": [{"region", "best_rank", "last_rank", "last_at"}]}.
func (h Hit) MarshalJSON() ([]byte, error) {
	regions := h.Regions
	if regions == nil {
		regions = []HitRegion{}
	}
	marks := h.Highlights
	if marks == nil {
		marks = [][2]int{}
	}
	return json.Marshal(hitJSON{h.VideoID, h.Title, h.ChannelTitle, h.Snippet, marks, h.Score, jsonTime(h.LastSeen), regions})
}
