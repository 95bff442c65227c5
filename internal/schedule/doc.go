// Package schedule runs trendfetch's scheduler mode: one robfig/cron/v3
// entry per region, each job wrapped in cron.Recover (a panic is logged, not
// fatal) and cron.SkipIfStillRunning (a region never runs twice at once), a
// semaphore bounding how many regions run together, and a graceful stop: no
// new jobs once Stop begins, running jobs get a grace period, then their
// contexts are cancelled.
//
// It also provides the schedules themselves (Every, Shift, ParseSpec) so
// that next-run times can be computed without starting a runner.
package schedule
