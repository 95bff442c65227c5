// Package quota keeps trendfetch inside the YouTube Data API quota: every API
// call first reserves its weighted cost from a per-credential limiter shared
// by every process and host that spends the same Google Cloud project's quota
// (DESIGN.md §4 is the contract).
//
// # Model
//
// A credential (a named project, never an API key) has Buckets, each at most
// Limit units in a sliding Window, or in Google's quota day when Calendar is
// set (midnight America/Los_Angeles, 23 and 25 hour days included; see
// PacificMidnight). The Costs table maps an API method to the units one call
// charges in one or more buckets; the default charges search.list 100 units
// of "units" and 1 of "search", and the other list methods 1 unit.
//
// Each admitted call is one log entry per bucket carrying its cost, so
// storage grows with calls, not units. Admission is exact: the units in the
// window plus the new cost must not exceed the limit, in every bucket the
// call charges, atomically; a denial records nothing. A denial carries a
// computed RetryAfter: the earliest moment at which enough of the oldest
// entries have expired for the same call to fit (never early, microsecond
// precision), or the next Pacific midnight for a calendar bucket.
//
// A cost above its bucket's limit can never be admitted: New rejects such a
// table with a *CostError instead of throttling forever. A 403 quotaExceeded
// from Google is fed back with MarkExhausted, which denies the credential
// (Decision.Exhausted) everywhere until the given time.
//
// # Backends
//
// Limiter decides through a Backend:
//
//   - NewRedis: shared by hosts; one Lua script per decision, Redis TIME as
//     the clock, one hash tag per credential so it works on Redis Cluster.
//   - NewSQLite: embedded, for single-host cron with zero setup; one
//     BEGIN IMMEDIATE transaction per decision on a local database file,
//     the local clock.
//
// Both pass one behaviour test suite (suite_test.go) and a multi-process
// over-admission test (procs_test.go). Every backend failure wraps
// ErrUnavailable so that call sites can apply their fail-open or
// fail-closed policy; a denial is a Decision, not an error.
package quota
