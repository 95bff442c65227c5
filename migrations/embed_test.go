package migrations_test

import (
	"testing"

	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/migrations"
)

// TestFilesNumbered checks the embedded files with the rule the opener
// applies on load (NNNN_name.sql, contiguous from 0001, non-empty, nothing
// else at the root), so a bad file fails here rather than at first open.
func TestFilesNumbered(t *testing.T) {
	if migs, err := sqlitedb.Migrations(migrations.FS); err != nil || len(migs) == 0 {
		t.Fatalf("embedded migrations: %d, %v", len(migs), err)
	}
}
