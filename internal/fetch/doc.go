// Package fetch is the run pipeline (docs/design.md §5; the steps in order
// are in docs/operations.md, "What a run does"): Runner.Run takes the
// region's lease (lease.go), records the run, then runs each step (enrich.go,
// chart.go, stats.go, search.go, refresh.go). Every API call goes through
// call.go: reserve (quota units, or the call site's policy when the limiter
// is down) -> send (request timeout, counted, key redacted) -> refund (only
// an attempt that never left the host) -> classify (docs/design.md §3) ->
// retry (transient failures, full-jitter backoff, each attempt reserved).
// A denial stops the run cleanly; pages are stored one transaction each.
package fetch
