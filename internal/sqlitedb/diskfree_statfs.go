//go:build linux || darwin || freebsd

package sqlitedb

import "syscall"

// freeBytes returns the bytes available to unprivileged users on dir's
// filesystem.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// readOnlyFS reports whether dir's filesystem is mounted read-only
// (ST_RDONLY on Linux, MNT_RDONLY on the BSDs: both bit 0 of the flags).
func readOnlyFS(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Flags&1 != 0
}
