package quota

import "time"

// WithClock replaces the local clock (time.Now) of every decision of s and
// returns s; see ClockStepTolerance for a clock that goes back.
func WithClock(s *sqliteBackend, now func() time.Time) *sqliteBackend {
	s.clock = now
	return s
}

var (
	_ leaseLocker = (*sqliteBackend)(nil)
	_ leaseLocker = (*redisBackend)(nil)
)
