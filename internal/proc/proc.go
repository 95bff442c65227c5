// Package proc answers whether a process that took a lock is gone, for the
// stale-lock rule of restic (internal/restic/lock.go, Lock.Stale: a lock is
// stale when its holder is on this host and its process no longer exists),
// and names what makes a pid meaningful: the boot (BootID) and the PID
// namespace (PIDNamespace) it was issued in. To survive pid reuse, a
// process with the pid that started after the lock was taken is a
// different process: the holder is gone too; so is a zombie (killed, not
// yet reaped by its parent).
package proc

import "time"

// startSlack absorbs the imprecision of a process start time read from the
// system (Linux: boot time in whole seconds plus clock ticks) and of a lock
// time recorded in whole seconds, so a live holder is never declared gone.
const startSlack = 3 * time.Second

// Gone reports whether the process pid (in this PID namespace, since this
// boot) that took a lock at since is gone: no process has that pid, it is a
// zombie (state Z: exited, not yet reaped), or the process that has it
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
