package storetest

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Pandas runs the Python program script with Debian's python3 and pandas
// (package python3-pandas; .ci/run installs it) and returns its standard
// output. Tests use it to load trendfetch's CSV exports the way analysts
// do (pandas.read_csv), with a reader trendfetch did not write. A missing
// python3 or pandas skips the test, and fails it under CI=true. Debian's
// pandas has no Parquet engine (no pyarrow or fastparquet packages), so
// Parquet is read by DuckDB instead.
func Pandas(t testing.TB, script string, args ...string) string {
	t.Helper()
	python := "/usr/bin/python3" // Debian's, which sees python3-pandas
	err := exec.Command(python, "-c", "import pandas").Run()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pandas is required in CI (CI=true): %v; apt-get install python3-pandas", err)
		}
		t.Skipf("skipping: pandas not installed (apt-get install python3-pandas): %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pandas: %v\n%s", err, stderr.String())
	}
	return string(out)
}
