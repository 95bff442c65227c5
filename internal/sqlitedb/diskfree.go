package sqlitedb

import "fmt"

// lowSpace is the free space below which a failure to open or write the
// database is reported as the filesystem being full: SQLite may only say
// "disk I/O error" (e.g. SQLITE_IOERR_SHMSIZE when the -shm file cannot
// grow), which points at hardware instead of the real cause.
const lowSpace = 1 << 20

// spaceHint returns " (the filesystem of dir is full: N KiB free)" when dir's
// filesystem has less than lowSpace bytes available, else "".
func spaceHint(dir string) string {
	free, ok := freeBytes(dir)
	if !ok || free >= lowSpace {
		return ""
	}
	return fmt.Sprintf(" (the filesystem of %s is full: %d KiB free)", dir, free>>10)
}
