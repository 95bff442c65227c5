//go:build !(linux || darwin || freebsd)

package sqlitedb

// freeBytes is unknown on this platform.
func freeBytes(string) (int64, bool) { return 0, false }

// readOnlyFS is unknown on this platform: never assumed.
func readOnlyFS(string) bool { return false }
