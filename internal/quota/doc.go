// Package quota keeps trendfetch inside the YouTube Data API quota: every API
// call first reserves its weighted cost from a per-credential limiter shared
// by every process and host that spends the same Google Cloud project's quota
// (DESIGN.md §4 is the contract; docs/quota.md has the design notes and
// measurements).
//
// A credential (a named project, never an API key) has Buckets, each at most
// Limit units in a sliding Window, or in Google's quota day when Calendar is
// set (midnight America/Los_Angeles). Costs maps an API method to the units
// one call charges in one or more buckets. Start with New and
// Limiter.Reserve: each admitted call is one exact sliding-window log entry
// per bucket carrying its cost (storage grows with calls, not units); the
// call is admitted into every bucket it charges or none; a denial records
// nothing and carries an exact RetryAfter. New refuses a cost above its
// bucket's limit (*CostError). MarkExhausted feeds back Google's 403
// quotaExceeded until the next Pacific midnight. Refund removes the entries
// of a call that provably never left the host, while they are still the
// newest of their buckets. Limiter.Status is what `quota status` shows.
//
// Backends:
//
//   - NewRedis: shared by hosts; one Lua script per decision (lua/*.lua,
//     redis_lua.go), Redis TIME as the clock, one hash tag per credential
//     so it works on Redis Cluster.
//   - NewSQLite: embedded, for single-host cron; one BEGIN IMMEDIATE
//     transaction per decision, the local clock.
//   - NewMemory: one process only (serve's per-client limits).
//
// SQLite and memory share one decision (decide.go); all three pass one
// behaviour suite (suite_test.go). Errors: a backend that cannot be reached
// wraps ErrUnavailable (the call site's fail-open/closed policy applies);
// one out of memory wraps ErrOutOfMemory (fail closed); a Redis user
// without permission is an *AccessError (a configuration error). Run
// leases (Limiter.AcquireLease, lease.go) keep two runs of a region apart;
// lease_holder.go says who holds one and when it is stale.
package quota
