package fetch

import (
	"cmp"
	"slices"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// Settings are the tunables of a run. A zero PageSize, Timeout or LeaseTTL
// means its default (callsite.RunDefaults); zero Retries means no retry; a
// zero interval or cap turns its step off.
type Settings struct {
	// PageSize is maxResults per chart page, 1-50.
	PageSize int64
	// Timeout bounds one API request.
	Timeout time.Duration
	// Retries is how many more attempts a transient failure gets, after a
	// first backoff of RetryBackoff (doubling, full jitter).
	Retries      int
	RetryBackoff time.Duration
	// LeaseTTL is the run lease's time to live, renewed every third of it.
	LeaseTTL time.Duration
	// ChartCategories lists, per region, videoCategoryId values fetched as
	// narrowed charts after the whole chart.
	ChartCategories map[string][]string
	// ChannelsRefresh and CategoriesRefresh: channels and a region's
	// categories are fetched when their stored data is older.
	ChannelsRefresh, CategoriesRefresh time.Duration
	// StatsTrackFor: videos on the region's chart within it, but not on the
	// chart just fetched, are sampled with videos.batchGetStats once their
	// newest statistics are StatsEvery old.
	StatsTrackFor, StatsEvery time.Duration
	// TextCutoff, when set, turns the text step on (store.policy amended):
	// text older than TextCutoff(now) is refreshed or removed.
	TextCutoff func(now time.Time) time.Time
	// TextRefreshPerDay caps the credential's videos.list.refresh calls in 24
	// hours (store.refresh_per_day; 0: old text is only removed).
	TextRefreshPerDay int
}

// withDefaults returns s with a PageSize, Timeout and LeaseTTL <= 0 set to
// its default.
func (s Settings) withDefaults() Settings {
	d := callsite.RunDefaults()
	s.PageSize = cmp.Or(max(s.PageSize, 0), d.PageSize)
	s.Timeout = cmp.Or(max(s.Timeout, 0), d.Timeout)
	s.LeaseTTL = cmp.Or(max(s.LeaseTTL, 0), d.LeaseTTL)
	return s
}

// Search is one search.list query of a region's run: type=video, q=Q,
// order=Order ("" = the API's relevance), publishedAfter = run start minus
// PublishedAfter (0 = no limit), up to MaxPages pages of 50 (0 = 1).
type Search struct {
	Q              string
	Order          string
	PublishedAfter time.Duration
	MaxPages       int
}

// Backlog carries stale channel ids to the next runs of one invocation, so
// channels.list is sent in full batches of 50; never shared by concurrent runs.
type Backlog struct {
	// Hold keeps a remainder of fewer than 50 for the next run; the caller
	// clears it before the last region.
	Hold bool
	ids  []string
}

// add queues ids not already queued.
func (b *Backlog) add(ids []string) {
	for _, id := range ids {
		if !slices.Contains(b.ids, id) {
			b.ids = append(b.ids, id)
		}
	}
}

// next returns the next batch to send: a full batch, or the remainder when
// the backlog does not hold it; nil when there is nothing to send now.
func (b *Backlog) next() []string {
	if len(b.ids) >= callsite.MaxIDs || (!b.Hold && len(b.ids) > 0) {
		return b.ids[:min(callsite.MaxIDs, len(b.ids))]
	}
	return nil
}
