package quota

import "time"

// WithClock replaces the local clock (time.Now) of every decision of b, a SQLite backend, and
// returns it; see ClockStepTolerance for a clock that goes back.
func WithClock(b Backend, now func() time.Time) *sqliteBackend {
	s := b.(*sqliteBackend)
	s.clock = now
	return s
}

var (
	_ leaseLocker = (*sqliteBackend)(nil)
	_ leaseLocker = (*redisBackend)(nil)
)
