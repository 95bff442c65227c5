package secret

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileBytes bounds a secret file (64 KiB): a larger one is refused, not
// read whole.
const MaxFileBytes = 64 << 10

// ReadFile returns the first line of the secret file at path, trimmed,
// reading at most MaxFileBytes. Errors never include the content; they say
// what to do. A FIFO or a directory is refused (reading a FIFO would block
// until a writer comes).
func ReadFile(path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("not a regular file (%s): write the secret alone on the first line of a regular file, chmod 600", fi.Mode().Type())
	case fi.Size() > MaxFileBytes:
		return "", fmt.Errorf("%d bytes, larger than %d KiB: a secret file holds one line; check the path", fi.Size(), MaxFileBytes>>10)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileBytes))
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line), nil
}

// Exposed reports whether path is a regular file its group or other users
// can read or write (mode & 0o077 != 0): a secret in it is exposed.
func Exposed(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0
}

// SystemdCredential returns the path of systemd credential name
// (LoadCredential=NAME:PATH in a unit) when the service's
// $CREDENTIALS_DIRECTORY (read with lookup) holds it.
func SystemdCredential(lookup func(string) (string, bool), name string) (string, bool) {
	dir, ok := lookup("CREDENTIALS_DIRECTORY")
	if !ok || dir == "" || name == "" || strings.ContainsAny(name, "/\x00") {
		return "", false
	}
	path := filepath.Join(dir, name)
	_, err := os.Stat(path)
	return path, err == nil
}
