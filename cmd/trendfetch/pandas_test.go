package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportCSVReadByPandas (issue 23 items 4 and 5): the per-region CSV
// files of both public layouts load with pandas.read_csv as analysts load
// the public datasets: one row per capture entry, the layout's columns,
// counts as integers, descriptions with their CRLF line endings intact
// (the 2017 layout writes a newline as the two characters \n, as its files do).
func TestExportCSVReadByPandas(t *testing.T) {
	e := newEnv(t)
	fillStore(t, e.dbPath(), 3, "US", "GB") // 3 hourly captures of 200 videos a region
	const script = `
import sys, pandas
df = pandas.read_csv(sys.argv[1])
views = df[sys.argv[2]]
print(len(df), str(views.dtype), int(views.sum()), df['description'].str.count(sys.argv[3]).min(), ','.join(df.columns[:4]))
`
	for _, c := range []struct{ layout, file, views, newline, head string }{
		{"youtube-new", "USvideos.csv", "views", `\r\\n`, "video_id,trending_date,title,channel_title"},
		{"trending-daily", "GB_youtube_trending_data.csv", "view_count", "\r\n", "video_id,title,publishedAt,channelId"},
	} {
		dir := filepath.Join(e.dir, c.layout) + "/"
		if res := e.run("export", "--layout", c.layout, "--every", "capture", "--output", dir); res.code != 0 {
			t.Fatalf("export --layout %s: exit %d\n%s", c.layout, res.code, res.stderr)
		}
		// Capture c has views 1000c + rank-1: 3 captures of 200 sum to 659,700.
		got := strings.TrimSpace(pandas(t, script, filepath.Join(dir, c.file), c.views, c.newline))
		if want := "600 int64 659700 40 " + c.head; got != want {
			t.Errorf("pandas.read_csv(%s): %q, want %q", c.file, got, want)
		}
	}
}

// pandas runs the Python program script with Debian's python3 and pandas
// (package python3-pandas; .ci/run installs it) and returns its standard
// output. Tests use it to load trendfetch's CSV exports the way analysts
// do (pandas.read_csv), with a reader trendfetch did not write. A missing
// python3 or pandas skips the test, and fails it under CI=true. Debian's
// pandas has no Parquet engine (no pyarrow or fastparquet packages), so
// Parquet is read by DuckDB instead.
func pandas(t testing.TB, script string, args ...string) string {
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
