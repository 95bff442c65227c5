package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// TestExportSinksOneOpen: rows in region order open one partition after
// the other and finish each when the next starts (one Parquet writer in
// memory however many partitions); an output whose rows come back later is
// an error, not a second file under the same name.
func TestExportSinksOneOpen(t *testing.T) {
	dir := t.TempDir()
	x := &sinks{Export: Export{Format: store.ExportFormat{Format: "parquet"}, Dir: dir, Partition: []string{"region", "date"}}, open: map[string]*sink{}}
	day := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		region string
		at     time.Time
	}{{"GB", day}, {"GB", day}, {"GB", day.Add(2 * time.Hour)}, {"US", day}, {"US", day.Add(time.Hour)}} {
		w, err := x.writer(r.region, r.at)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Row(&store.ExportRow{VideoID: "a", Region: r.region, CapturedAt: r.at}); err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, s := range x.open {
			if s.w != nil {
				open++
			}
		}
		if open != 1 {
			t.Errorf("after a row of %s at %v: %d outputs open, want 1", r.region, r.at, open)
		}
	}
	if _, err := x.writer("GB", day); err == nil {
		t.Error("GB's first partition again after US: no error")
	}
	if err := x.commit(); err != nil {
		t.Fatal(err)
	}
	got := storetest.DuckDB(t, "SELECT region, CAST(date AS VARCHAR), count(*) FROM read_parquet('"+dir+"/**/*.parquet', hive_partitioning = true) GROUP BY ALL ORDER BY ALL")
	if want := "[\"GB\",\"2026-11-24\",\"2\"]\n[\"GB\",\"2026-11-25\",\"1\"]\n[\"US\",\"2026-11-24\",\"1\"]\n[\"US\",\"2026-11-25\",\"1\"]\n"; got != want {
		t.Errorf("partitions:\n%s\nwant\n%s", got, want)
	}
}

// TestExportSinksAbort: an export that fails half-way (here: after one
// row) leaves neither a partial --output file nor a temporary one, and an
// existing file keeps its content.
func TestExportSinksAbort(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "us.csv")
	if err := os.WriteFile(out, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*sinks{
		{Export: Export{Format: store.ExportFormat{Format: "csv", Layout: store.LayoutYoutubeNew}, File: out}, open: map[string]*sink{}},
		{Export: Export{Format: store.ExportFormat{Format: "parquet"}, Dir: filepath.Join(dir, "pq"), Partition: []string{"region", "date"}}, open: map[string]*sink{}},
	} {
		w, err := x.writer("US", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Row(&store.ExportRow{VideoID: "a", Region: "US", Title: strings.Repeat("x", 1<<20)}); err != nil {
			t.Fatal(err)
		}
		x.abort()
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "old\n" {
		t.Errorf("--output after a failed export: %q, %v", b, err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != out {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("files left by failed exports: %v", left)
	}
}
