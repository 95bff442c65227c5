//go:build !(linux || darwin || freebsd)

package sqlitedb

// statfs is unknown on this platform (never read-only).
func statfs(string) (free int64, readOnly, ok bool) { return 0, false, false }
