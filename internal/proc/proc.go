// Package proc answers whether a process that took a lock is gone, for the
// stale-lock rule of docs/design.md §5, and names what makes a pid
// meaningful: the boot (BootID), the PID namespace (PIDNamespace) and the
// process's start in clock ticks after boot (StartTicks: a pid reused by a
// later process, or a zombie, is gone; no step of the wall clock changes it).
package proc

// Gone reports whether the process pid (in this PID namespace, since this
// boot) that started at startTicks (0 when unknown) is gone: no process has
// that pid, it is a zombie, or the pid's process started at another tick.
// It answers false when it cannot tell: a lock is never broken on a guess.
func Gone(pid int, startTicks uint64) bool {
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
	return started != 0 && startTicks != 0 && started != startTicks
}

// StartTicks returns when process pid started, in clock ticks after boot
// (field 22 of /proc/<pid>/stat, proc(5)), or 0 when unknown.
func StartTicks(pid int) uint64 {
	exists, started, ok := inspect(pid)
	if !ok || !exists {
		return 0
	}
	return started
}
