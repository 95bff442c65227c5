package youtubetest

import (
	"fmt"
	"os"
	"path/filepath"
)

// FindDataDir walks up from dir to the directory holding go.mod (the repository root) and
// returns the directory shared/data beside it, the recorded data (docs/design.md §7). It returns
// an error wrapping fs.ErrNotExist when there is no go.mod above dir or the data directory
// does not exist.
func FindDataDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cannot find data directory: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			data := filepath.Join(d, "..", "shared", "data")
			if _, err := os.Stat(data); err != nil {
				return "", fmt.Errorf("cannot find data directory %s: %w", data, err)
			}
			return filepath.Clean(data), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("cannot find data directory: no go.mod above %s: %w", abs, os.ErrNotExist)
		}
	}
}
