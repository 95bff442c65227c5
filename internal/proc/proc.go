// Package proc answers whether a process that took a lock is gone, for the
// stale-lock rule of restic (docs/design.md §5: a lock is stale when its
// holder is on this host and its process no longer exists),
// and names what makes a pid meaningful: the boot (BootID), the PID
// namespace (PIDNamespace) it was issued in and the process's start
// (StartTicks). To survive pid reuse, a process with the pid that started
// at another tick is a different process: the holder is gone too; so is a
// zombie (killed, not yet reaped by its parent). Start ticks count from
// boot, so no step of the wall clock (date -s, an NTP step, a resumed VM)
// changes a process's identity.
package proc

// Gone reports whether the process pid (in this PID namespace, since this
// boot) that started at startTicks (StartTicks of that process; 0 when
// unknown) is gone: no process has that pid, it is a zombie (state Z:
// exited, not yet reaped), or the process that has it started at another
// tick (the pid was reused). It answers false when it cannot tell (a
// platform without process inspection): a lock must never be broken on a
// guess.
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
// (field 22 of /proc/<pid>/stat, proc(5)), or 0 when unknown (no such
// process, a platform without process inspection). Unlike a wall-clock
// start time it is the same whatever the wall clock does.
func StartTicks(pid int) uint64 {
	exists, started, ok := inspect(pid)
	if !ok || !exists {
		return 0
	}
	return started
}
