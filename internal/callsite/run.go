package callsite

import "time"

// Run holds the defaults of a run's tunables: the one home that package
// config (api.*, runs.lease_ttl, stats.*) and package fetch (the zero
// values of its Settings) both read.
type Run struct {
	// PageSize is maxResults per chart page: MaxIDs, the largest.
	PageSize int64
	// Timeout bounds one API request.
	Timeout time.Duration
	// Retries is how many more attempts a transient failure gets, from a
	// first backoff of RetryBackoff (doubling, full jitter).
	Retries      int
	RetryBackoff time.Duration
	// LeaseTTL is the run lease's time to live, renewed every third of it.
	LeaseTTL time.Duration
	// StatsTrackFor is how long videos are followed with
	// videos.batchGetStats after they left the chart; StatsEvery the
	// minimum age of a video's newest statistics before it is sampled again.
	StatsTrackFor time.Duration
	StatsEvery    time.Duration
}

// RunDefaults returns the defaults of a run: pages of 50, a 30 s request
// timeout, 2 retries from a 1 s backoff, a 2 min lease, videos followed
// for 168 h after they left the chart, every 6 h.
func RunDefaults() Run {
	return Run{
		PageSize:      MaxIDs,
		Timeout:       30 * time.Second,
		Retries:       2,
		RetryBackoff:  time.Second,
		LeaseTTL:      2 * time.Minute,
		StatsTrackFor: 168 * time.Hour,
		StatsEvery:    6 * time.Hour,
	}
}
