package config

// Stats configures the statistics step of a run (issue 11): after the
// chart, videos that were on the region's chart within TrackFor but are not
// on the chart just fetched are sampled with videos.batchGetStats (bucket
// stats, 50 ids a call), each at most once per Every.
type Stats struct {
	// TrackFor is how long after its last chart appearance in a region a
	// video is followed (default 168h; 0 turns the step off).
	TrackFor Duration `yaml:"track_for"`
	// Every is the minimum age of a video's newest statistics point before
	// it is sampled again (default 6h).
	Every Duration `yaml:"every"`
}

// validate reports a negative duration.
func (s Stats) validate() error {
	if s.TrackFor < 0 {
		return invalid("stats.track_for", s.TrackFor.Std(), "must be 0 (off) or positive, e.g. 168h")
	}
	if s.Every < 0 {
		return invalid("stats.every", s.Every.Std(), "must be 0 (every run) or positive, e.g. 6h")
	}
	return nil
}
