package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// BootID returns this boot's id (/proc/sys/kernel/random/boot_id), "" when unknown.
func BootID() string {
	raw, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(raw))
}

// PIDNamespace returns this process's PID namespace, e.g. "pid:[4026531836]" (readlink
// /proc/self/ns/pid), "" when unknown.
func PIDNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

// inspect reports whether pid exists (kill(pid, 0): ESRCH none, EPERM
// another user's; state Z or X in /proc/<pid>/stat: exited, not reaped)
// and its start ticks (0 when unreadable); ok is false when it cannot tell.
func inspect(pid int) (exists bool, started uint64, ok bool) {
	switch err := syscall.Kill(pid, 0); {
	case errors.Is(err, syscall.ESRCH):
		return false, 0, true
	case err != nil && !errors.Is(err, syscall.EPERM):
		return false, 0, false
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true, 0, true // exists; start unknown
	}
	// The command name (field 2) may hold spaces and ')': fields start after the last ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return true, 0, true
	}
	fields := strings.Fields(string(raw[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X") {
		return false, 0, true // a zombie (or dead): exited, only not reaped yet
	}
	if len(fields) < 20 {
		return true, 0, true
	}
	ticks, _ := strconv.ParseUint(fields[19], 10, 64) // 0 (unknown) when malformed
	return true, ticks, true
}
