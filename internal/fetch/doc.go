// Package fetch is the run pipeline: for each API call of a region's run it
// reserves the call's weighted cost from the quota limiter, applies the call
// site's fail-open/fail-closed policy when the limiter backend is
// unreachable, sends the call with the google.golang.org/api/youtube/v3
// client, and stores each page in one transaction. A denial stops the run
// cleanly (no sleeping); the run record says why and when to retry.
//
// One run, in the order the code runs it (Runner.Run, fetch.go):
//
//  1. settings.go: the Runner's Settings get their defaults (WithDefaults),
//     once per run.
//  2. lease.go: the region's run lease is taken in the quota backend (a
//     held lease ends the run with *quota.LeaseHeldError; a down backend
//     lets it go on without one) and renewed while the run lasts.
//  3. fetch.go: the run record is started, runs of this region still
//     marked running are marked abandoned (only when holding the lease),
//     and the per-run state (runState: videos seen, channels, call
//     counts, limiter-down flag) is created.
//  4. enrich.go: videoCategories.list for the region when its stored
//     categories are older than CategoriesRefresh.
//  5. chart.go: chart=mostPopular page by page (pageToken), each page stored
//     in one transaction as part of the run's capture, then each configured
//     category chart.
//  6. stats.go: videos.batchGetStats for the region's followed videos that
//     left the chart and are due (stats.track_for, stats.every), in batches
//     of 50; a denial stops only this step.
//  7. search.go: the region's search.list queries, then videos.list id= for
//     hits not fetched yet, stored as search captures.
//  8. enrich.go: channels.list for stale channels in batches of 50 (a
//     Backlog carries a remainder to the next region of the invocation).
//  9. fetch.go: the run's outcome and reason (outcome) are recorded and
//     logged.
//
// Every API call of steps 4-8 goes through call.go, the call-site protocol:
// reserve (quota units, or the call site's policy) -> send (request
// timeout, counted, key redacted) -> refund (only an attempt that provably
// never left the host) -> classify (the API's error answers,
// docs/design.md §3) -> retry (transient failures, full-jitter backoff,
// each attempt reserved again). Call sites, their default charges and
// policies are declared once, in package callsite.
package fetch
