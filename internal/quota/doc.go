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
// # Sliding-window counter
//
// A bucket with Algorithm AlgorithmCounter (config `algorithm: counter`)
// keeps Slots fixed counters instead of a log: the seed note's "Sliding
// Window Counter", generalized. Each counter covers Window/(Slots-1),
// aligned to the Unix epoch; the rolling count at now is estimated as the
// sum of the counters wholly inside the window plus the oldest counter
// weighted by the part of it still inside (the note's "previous x overlap +
// current" for the default Slots = 2; Slots = 61 on a one-minute window is
// the seed article's one-second fields summed over the trailing window).
// Memory is O(Slots) per bucket whatever the limit and the call rate (on
// Redis a hash of Slots 16-byte fields and its geometry: MEMORY USAGE 168
// bytes for 2 slots, 280 for 8, 1,368 for 61, at limits of 100, 10^4 and
// 10^6 alike, where a saturated log takes 3 KB at 100 calls, 118 KB at
// 10^3 and 1.3 MB at 10^4; TestRedisCounterMemoryUsage). A decision is
// atomic like the log's, across log and counter buckets alike, in the same
// script or transaction (counter.go, redis_counter.go, counter_sqlite.go,
// counter_memory.go), and every backend computes the same estimate in the
// same doubles (TestCounterBackendsAgree, TestRedisCounterAgreesWithMemory).
//
// The estimate assumes the oldest counter's units were spread evenly over
// it. Where they were not, the error is at most that counter's units, so:
//
//   - over-admission (units in some window above the limit) and
//     under-admission (a denial the exact log would have admitted, in units
//     it still had free) are each at most the units admitted into one
//     sub-window, hence below the limit: with the whole limit spent at the
//     very end of one sub-window, up to 2x the limit can be admitted within
//     one window, whatever Slots (TestCounterBoundaryBurst: 199 for a limit
//     of 100 with 2, 3, 5 and 61 slots);
//   - with demand spread evenly (uniform, at any rate) a sub-window holds at
//     most its share, and both are at most Limit/(Slots-1).
//
// Measured (TestCounterAccuracy; limit 600 per minute, simulated clock, 5
// windows; over- and under-admission in units):
//
//	demand                         slots 2   3    5    13   61   (the exact log: 0 over)
//	uniform, 2x the rate   over       0      0    0    0    0
//	                       under    301      1    1    1    1   (slots 2: the first window's front-loaded counter)
//	bursty, bursts <= 150  over     149    154  114   25   10
//	                       under     54     56   34   60   30
//	bursty, bursts <= 600  over     178     28   56  168   91
//	                       under    138    275  220    0    0
//
// The seed article's boundary burst (a full burst 1 ms before a window
// boundary, another 1 ms after) is admitted twice by a fixed window (200
// for a limit of 100); the counter admits 100 with 2, 3, 5 and 61 slots,
// like the log.
//
// Its Retry-After is the estimate's: the earliest moment the estimate plus
// the cost fits the limit with nothing else admitted (never early, but a
// counter's units leave the window up to one sub-window after the calls
// that made them would have left a log). Status reports the estimate
// rounded up as Used; Entries and Oldest are unknown to a counter (0 and
// the zero time; null in the JSON view), and UsedToday counts the counters
// that began at or after the last Pacific midnight (a lower bound). A
// refund takes the units back from the counter they went into, once per
// Reservation (copies share it). Calendar buckets are always logs: New refuses a counter with
// Calendar. Switching a bucket between algorithms, or a counter's slots
// or window, carries its usage over (switch.go): the log's entries go to
// the counters of their moments; a counter's units count as admitted at the
// end of their counter.
//
// # Refund
//
// An admitted Decision carries a Reservation naming the entries it recorded.
// When the call provably never left the host (a DNS failure, a refused
// connection: no byte of the request was written), the call site hands it
// to Refund, which removes exactly those entries from every bucket they
// were charged to, atomically; nothing else is ever refunded, because
// Google counts every request it receives, answered or not. A refund is
// idempotent, and a no-op for an entry that has already left its window.
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
//   - NewMemory: one process only (trendfetch serve's per-client limits);
//     the local clock.
//
// All pass one behaviour test suite (suite_test.go), and Redis and SQLite
// a multi-process over-admission test (procs_test.go), with both
// algorithms. Every backend failure wraps ErrUnavailable so that call
// sites can apply their fail-open or fail-closed policy; a denial is a
// Decision, not an error.
//
// # Clock steps (embedded backends)
//
// The SQLite and memory backends stamp entries and decide windows with the
// local clock (WithClock, WithMemoryClock), so a step of that clock moves
// every window:
//
//   - Forward: every entry looks older by the step. A step of a day (or of
//     a window) makes the whole log look expired, and a full window is
//     admitted again at once; calendar buckets likewise see the next
//     Pacific day. Nothing can detect this locally: a correct clock
//     (NTP) is the only guard, and Google's own count still answers 403
//     quotaExceeded (MarkExhausted), which bounds the damage to one day.
//   - Backward: new entries would look older than the ones before them and
//     leave the window early, and calendar buckets would count from an
//     earlier midnight. A step of at most ClockStepTolerance (2 s) is
//     absorbed: new entries are stamped no earlier than the newest one.
//     Beyond it, Reserve admits nothing into a bucket whose newest entry is
//     later than the clock plus the tolerance: it denies with
//     Decision.ClockBehind (how far the clock is behind that entry) and a
//     RetryAfter ending when the clock has caught up to within the
//     tolerance. If the earlier clock was the wrong one (it ran ahead and
//     was corrected), `trendfetch quota reset` clears the entries instead
//     of waiting.
//
// The Redis backend takes its clock from Redis TIME alone (redis_lua.go):
// client clocks do not matter, and a Redis server's clock step moves its
// windows in the same way. A step back over-counts instead of denying: a
// log entry is never scored before the newest and entries from "the
// future" stay inside the window; a counter from the future counts as the
// current one (redis_counter.go) until TIME passes it.
package quota
