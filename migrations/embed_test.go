package migrations_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"testing"

	"github.com/trendfetch/trendfetch/migrations"
)

// TestFilesNumbered checks the naming contract the store validates on load:
// NNNN_name.sql, contiguous from 0001, nothing else at the root.
func TestFilesNumbered(t *testing.T) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no migrations embedded")
	}
	re := regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)
	for i, e := range entries {
		if !re.MatchString(e.Name()) {
			t.Errorf("bad migration name %q", e.Name())
			continue
		}
		if want := fmt.Sprintf("%04d_", i+1); e.Name()[:5] != want {
			t.Errorf("migration %d is %q, want prefix %q", i+1, e.Name(), want)
		}
		b, err := fs.ReadFile(migrations.FS, e.Name())
		if err != nil || len(b) == 0 {
			t.Errorf("%s: empty or unreadable: %v", e.Name(), err)
		}
	}
}
