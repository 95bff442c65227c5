//go:build linux || darwin || freebsd

package sqlitedb

import "syscall"

// statfs returns the bytes available to unprivileged users on dir's
// filesystem and whether it is mounted read-only (ST_RDONLY on Linux,
// MNT_RDONLY on the BSDs: both bit 0 of the flags); ok is false on error.
func statfs(dir string) (free int64, readOnly, ok bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return 0, false, false
	}
	return int64(st.Bavail) * int64(st.Bsize), st.Flags&1 != 0, true
}
