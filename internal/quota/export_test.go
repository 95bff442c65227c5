package quota

import "time"

// WithClock replaces the local clock (time.Now) of every SQLite decision;
// see ClockStepTolerance for a clock that goes back.
func WithClock(now func() time.Time) sqliteOption {
	return func(s *sqliteBackend) { s.clock = now }
}

var (
	_ leaseLocker = (*sqliteBackend)(nil)
	_ leaseLocker = (*redisBackend)(nil)
)
