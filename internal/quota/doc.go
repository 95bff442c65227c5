// Package quota keeps trendfetch inside the YouTube Data API quota: every API call first reserves
// its weighted cost from a per-credential limiter shared by every process and host spending the
// same Google Cloud project's quota. docs/design.md §4 is the contract; docs/quota.md has the
// design notes and measurements.
//
// Start with New (buckets and costs, checked once) over a Backend: NewRedis
// (shared by hosts) or NewSQLite (one host). Then Limiter.Reserve, Refund,
// MarkExhausted, Status and AcquireLease. Errors: ErrUnavailable (the call
// site's fail-open/closed policy applies), ErrOutOfMemory (fail closed),
// *AccessError (a configuration error).
package quota
