// Package proc tells whether a lock's holder process is gone (docs/design.md §5): a pid means
// something only with its boot (BootID), PID namespace (PIDNamespace) and start (StartTicks).
package proc

// Gone reports whether the process pid (this namespace and boot) that started at startTicks (0 =
// unknown) is gone: no such pid, a zombie, or another start tick. False when it cannot tell.
func Gone(pid int, startTicks uint64) bool {
	if pid <= 0 {
		return false
	}
	exists, started, ok := inspect(pid)
	return ok && (!exists || started != 0 && startTicks != 0 && started != startTicks)
}

// StartTicks returns when process pid started, in clock ticks after boot
// (field 22 of /proc/<pid>/stat, proc(5)), or 0 when unknown.
func StartTicks(pid int) uint64 {
	_, started, _ := inspect(pid) // 0 unless it exists and is known
	return started
}
