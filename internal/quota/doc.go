// Package quota keeps trendfetch inside the YouTube Data API quota: every API
// call first reserves its weighted cost from a per-credential limiter shared
// by every process and host spending the same Google Cloud project's quota.
// docs/design.md §4 is the contract; docs/quota.md has the design notes and
// measurements.
//
// A credential (a named project, never an API key) has Buckets of at most
// Limit units in a sliding Window, or in Google's quota day when Calendar
// (from midnight America/Los_Angeles). Costs maps an API method to the units
// one call charges in one or more buckets. New checks both (*SettingError,
// *CostError); Limiter.Reserve admits a call into every bucket it charges or
// none, as one exact log entry per bucket carrying its cost, and a denial
// records nothing and carries an exact RetryAfter. MarkExhausted feeds back
// Google's 403 quotaExceeded until the next Pacific midnight; Refund gives
// back a call that provably never left the host; Status is what `quota
// status` shows; AcquireLease keeps two runs of a region apart (lease.go,
// lease_holder.go).
//
// Backends: NewRedis (shared by hosts; one Lua script per decision, Redis
// TIME as the clock, one hash tag per credential for Cluster), NewSQLite
// (single host; one BEGIN IMMEDIATE transaction per decision) and NewMemory
// (one process). SQLite and memory share one decision (decide.go); all pass
// one behaviour suite (suite_test.go). A backend that cannot be reached
// wraps ErrUnavailable (the call site's fail-open/closed policy applies),
// one out of memory wraps ErrOutOfMemory (fail closed), and a Redis user
// without permission is an *AccessError (a configuration error).
package quota
