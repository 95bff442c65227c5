package fetch

import (
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// Settings are the tunables of a run; their defaults are
// callsite.RunDefaults. The zero value of a field means its
// default where zero is not a usable value (PageSize, Timeout, LeaseTTL):
// WithDefaults fills those, once, at the start of every run. Zero Retries
// means no retry and zero refresh intervals turn their call site off.
type Settings struct {
	// PageSize is maxResults per chart page, 1-50.
	PageSize int64
	// Timeout bounds one API request.
	Timeout time.Duration
	// Retries is how many more attempts a transient failure gets (0 = none);
	// RetryBackoff is the first backoff (doubling, full jitter).
	Retries      int
	RetryBackoff time.Duration
	// LeaseTTL is the run lease's time to live, renewed every
	// third of it while the run lasts: it bounds how long a crashed run blocks
	// its region.
	LeaseTTL time.Duration
	// ChartCategories lists, per region, videoCategoryId values fetched as
	// narrowed charts after the whole chart.
	ChartCategories map[string][]string
	// ChannelsRefresh > 0 enables channels.list enrichment of channels whose
	// stored data is older than it.
	ChannelsRefresh time.Duration
	// CategoriesRefresh > 0 enables videoCategories.list for a region whose
	// stored categories are older than it.
	CategoriesRefresh time.Duration
	// StatsTrackFor > 0 enables the statistics step after the chart: videos
	// on the region's chart within StatsTrackFor before the run, but not on
	// the chart just fetched, are sampled with videos.batchGetStats (0 turns
	// it off).
	StatsTrackFor time.Duration
	// StatsEvery is the minimum age of a followed video's newest statistics
	// point before it is sampled again.
	StatsEvery time.Duration
	// TextCutoff, when set, enables the text step at the end of a run
	// (store.policy amended): stored text older than TextCutoff(now) (30
	// calendar days, store.Policy.Cutoffs) is refreshed with
	// videos.list.refresh, or removed leaving the id (nil: off, the default).
	TextCutoff func(now time.Time) time.Time
	// TextRefreshPerDay caps the videos.list.refresh calls (50 ids each) of
	// a credential in 24 hours (config store.refresh_per_day); 0 refreshes
	// nothing, old text is removed.
	TextRefreshPerDay int
}

// WithDefaults returns s with every zero PageSize, Timeout and LeaseTTL set
// to its default (callsite.RunDefaults); other fields are kept as given.
func (s Settings) WithDefaults() Settings {
	d := callsite.RunDefaults()
	if s.PageSize <= 0 {
		s.PageSize = d.PageSize
	}
	if s.Timeout <= 0 {
		s.Timeout = d.Timeout
	}
	if s.LeaseTTL <= 0 {
		s.LeaseTTL = d.LeaseTTL
	}
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

// Backlog carries stale channel ids from one run to the next runs of the
// same invocation, so that channels.list is sent in full batches of 50
// where the data allows. It is owned by the caller (the `run` command
// creates one per invocation), never shared by concurrent runs; a Runner
// without one sends every remainder at the end of each run.
type Backlog struct {
	// Hold keeps a remainder of fewer than 50 for the next run; the caller
	// clears it before the last region.
	Hold bool
	ids  []string
	set  map[string]bool
}

// add queues ids not already queued.
func (b *Backlog) add(ids []string) {
	if b.set == nil {
		b.set = map[string]bool{}
	}
	for _, id := range ids {
		if !b.set[id] {
			b.set[id] = true
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

// done removes the first n ids, sent successfully.
func (b *Backlog) done(n int) {
	for _, id := range b.ids[:n] {
		delete(b.set, id)
	}
	b.ids = b.ids[n:]
}
