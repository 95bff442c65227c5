package store

import "time"

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
// first: JSON Lines exports write its Date on every row as youtube_change,
// so rows of one series with different values are not comparable as-is.
func ChangeInEffect(t time.Time) *Change {
	var in *Change
	for i := range Changes {
		if !Changes[i].At().After(t) {
			in = &Changes[i]
		}
	}
	return in
}
