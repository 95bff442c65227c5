package callsite

import "time"

// Run holds the defaults of a run's tunables, read by package config (api.*,
// runs.lease_ttl, stats.*) and package fetch (the zero values of its Settings;
// the fields mean what fetch.Settings' do).
type Run struct {
	PageSize                  int64
	Timeout, RetryBackoff     time.Duration
	Retries                   int
	LeaseTTL                  time.Duration
	StatsTrackFor, StatsEvery time.Duration
}

// RunDefaults returns the defaults of a run: pages of 50, a 30 s request
// timeout, 2 retries from a 1 s backoff, a 2 min lease, videos followed for
// 168 h after they left the chart, every 6 h.
func RunDefaults() Run {
	return Run{PageSize: MaxIDs, Timeout: 30 * time.Second, Retries: 2, RetryBackoff: time.Second,
		LeaseTTL: 2 * time.Minute, StatsTrackFor: 168 * time.Hour, StatsEvery: 6 * time.Hour}
}
