package config

// Stats is the `stats` section, the statistics step of a run: videos that
// were on the region's chart within TrackFor (0 = off) but are not on the
// chart just fetched are sampled with videos.batchGetStats, each at most
// once per Every.
type Stats struct {
	TrackFor Duration `yaml:"track_for"`
	Every    Duration `yaml:"every"`
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
