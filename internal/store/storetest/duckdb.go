package storetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// DuckDB runs sql with DuckDB's Node.js client (scripts/duckdb/query.mjs,
// installed by scripts/ensure-duckdb.sh) and returns its rows, one JSON
// array a line (BIGINT as strings). A missing node or DuckDB skips the
// test, and fails it under CI=true.
func DuckDB(t testing.TB, sql string) string {
	t.Helper()
	script, err := repoFile(filepath.Join("scripts", "duckdb", "query.mjs"))
	node := ""
	if err == nil {
		node, err = exec.LookPath("node")
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@duckdb", "node-api"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("DuckDB is required in CI (CI=true): %v; run scripts/ensure-duckdb.sh", err)
		}
		t.Skipf("skipping: DuckDB not installed (scripts/ensure-duckdb.sh): %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, script, sql)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb %q: %v\n%s", sql, err, stderr.String())
	}
	return string(out)
}

// repoFile returns the absolute path of rel in the repository (the first
// directory up from the working directory that holds go.mod).
func repoFile(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, rel), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", os.ErrNotExist
		}
		dir = up
	}
}
