package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStoreURLFile: store.url_file gives the PostgreSQL URL (password
// included) that replaces database; a file without such a URL is a
// one-line error naming the setting, never the content; the quota
// database of a PostgreSQL setup stays a local file.
func TestStoreURLFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "db-url")
	const url = "postgres://tf:s3cret@db.example:5432/trendfetch?sslmode=verify-full"
	if err := os.WriteFile(f, []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse(strings.NewReader("store:\n  url_file: " + f + "\n"))
	if err != nil || c.Database != url || c.Validate() != nil {
		t.Fatalf("url_file: %v %q %v", err, c.Database, c.Validate())
	}
	if !slices.Contains(c.SecretFiles(), f) {
		t.Errorf("SecretFiles() = %v, want the URL file", c.SecretFiles())
	}
	if strings.Contains(c.Quota.SQLite.Path, "postgres") || !filepath.IsAbs(c.Quota.SQLite.Path) {
		t.Errorf("quota.sqlite.path = %q, want a local file", c.Quota.SQLite.Path)
	}
	if err := os.WriteFile(f, []byte("/var/lib/trendfetch/s3cret.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = parse(strings.NewReader("store:\n  url_file: " + f + "\n"))
	if err == nil || !strings.Contains(err.Error(), "store.url_file") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("file without a URL: %v", err)
	}
}
