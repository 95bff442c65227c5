// Package proc answers whether a process of this host that took a lock is
// gone, for the stale-lock rule of restic (internal/restic/lock.go,
// Lock.Stale: a lock is stale when its holder is on this host and its
// process no longer exists). To survive pid reuse, a process with the pid
// that started after the lock was taken is a different process: the holder
// is gone too.
package proc

import "time"

// startSlack absorbs the imprecision of a process start time read from the
// system (Linux: boot time in whole seconds plus clock ticks) and of a lock
// time recorded in whole seconds, so a live holder is never declared gone.
const startSlack = 3 * time.Second

// Gone reports whether the process pid that took a lock at since is gone
// from this host: no process has that pid, or the process that has it
// started more than a few seconds after since (the pid was reused). It
// answers false when it cannot tell (an unknown start time, a platform
// without process inspection): a lock must never be broken on a guess.
func Gone(pid int, since time.Time) bool {
	if pid <= 0 {
		return false
	}
	exists, started, ok := inspect(pid)
	if !ok {
		return false
	}
	if !exists {
		return true
	}
	return !started.IsZero() && !since.IsZero() && started.After(since.Add(startSlack))
}
