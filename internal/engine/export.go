package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
)

// Export is one export, written in Format to Output (Export resolves it into Dir or File), else
// to Dir, else File, else Stdout.
type Export struct {
	Query  store.ExportQuery // the captures (Export sets its GroupBy)
	Format store.ExportFormat
	// Output is --output: "" or "-" Stdout; a directory (one that exists, or a path ending in a
	// separator) one file per region, or Partition's directories; any other path one file.
	Output    string
	Dir       string   // one file per region under the datasets' names, or Partition's directories
	Partition []string // "region" and/or "date": hive-style directories under Dir
	File      string
	Stdout    io.Writer
	Terminal  bool   // Stdout is a terminal: binary formats are refused there
	Row       func() // when set, called before each row (progress)
}

// ToStdout reports whether x writes to Stdout (the reader may stop early: export | head).
func (x Export) ToStdout() bool {
	return (x.Output == "" || x.Output == "-") && x.Dir == "" && x.File == ""
}

// Export writes the rows of x.Query from st (one read snapshot) to x's outputs, renamed into
// place when every row is written: a failed export leaves no partial file. One is open at a time.
// Usage errors: an output (a directory or a temporary file) that cannot be created, --partition
// without a directory, Parquet to a terminal, several regions in one CSV without a region column.
func (e *Engine) Export(ctx context.Context, st *store.Store, x Export) error {
	if err := x.resolve(ctx, st); err != nil {
		return err
	}
	// Each output's rows come together (sinks.writer); Parquet's by region (smaller dictionaries).
	q := x.Query
	switch {
	case slices.Equal(x.Partition, []string{"date"}):
		q.GroupBy = []string{"date", "region"}
	case x.Format.Format == "parquet" || x.Dir != "":
		q.GroupBy = []string{"region"}
	}
	s := &sinks{Export: x, open: map[string]*sink{}}
	var seen []string
	err := st.Export(ctx, q, func(r *store.ExportRow) error {
		if !slices.Contains(seen, r.Region) {
			seen = append(seen, r.Region)
			if err := x.checkRegions(seen); err != nil { // a region stored since resolve looked
				return err
			}
		}
		if x.Row != nil {
			x.Row()
		}
		w, err := s.writer(r.Region, r.CapturedAt)
		if err != nil {
			return err
		}
		return w.Row(r)
	})
	if err == nil {
		err = s.commit()
	}
	if err != nil {
		s.abort()
	}
	return err
}

// resolve decides x's target from Output and refuses an export its target cannot take.
func (x *Export) resolve(ctx context.Context, st *store.Store) error {
	if !x.ToStdout() && x.Dir == "" && x.File == "" {
		x.File = x.Output
		if fi, err := os.Stat(x.Output); (err == nil && fi.IsDir()) || os.IsPathSeparator(x.Output[len(x.Output)-1]) {
			x.Dir, x.File = x.Output, ""
		}
	}
	switch {
	case len(x.Partition) > 0 && x.Dir == "":
		return Usagef("trendfetch export --format parquet --partition region,date --output DIR/", "--partition needs --output DIR/ (a directory)")
	case x.Dir == "" && x.File == "" && x.Format.Format == "parquet" && x.Terminal:
		return Usagef("trendfetch export --format parquet --output charts.parquet", "--format parquet writes binary: not to a terminal; use --output FILE or redirect standard output")
	}
	if x.Dir != "" {
		if err := os.MkdirAll(x.Dir, 0o755); err != nil {
			return x.outputError(x.Dir, err)
		}
	}
	if !x.oneCSV() {
		return nil
	}
	regions, err := st.ExportRegions(ctx, x.Query)
	if err != nil {
		return err
	}
	return x.checkRegions(regions)
}

// oneCSV reports whether x writes one CSV without a region column, which cannot tell regions
// apart: one region at most.
func (x *Export) oneCSV() bool {
	return x.Format.Format == "csv" && x.Dir == "" && !x.Format.RegionColumn
}

// checkRegions refuses regions when they are several and x writes one CSV (oneCSV).
func (x *Export) checkRegions(regions []string) error {
	if !x.oneCSV() || len(regions) <= 1 {
		return nil
	}
	return Usagef("trendfetch export --output DIR/",
		"cannot write %d regions (%s) to one CSV without a region column: use --output DIR/ (one file per region) or --region-column", len(regions), strings.Join(regions, ","))
}

// outputError is the usage error of an output at path that cannot be created.
func (x Export) outputError(path string, err error) error {
	if x.Dir != "" {
		return Usagef("trendfetch export --output DIR/", "--output %s: %v", path, err)
	}
	return Usagef("trendfetch export --output FILE", "--output %s: %v", path, err)
}

// sinks holds the outputs of one export.
type sinks struct {
	Export
	open map[string]*sink // by path ("" for standard output)
	last *sink            // the output of the last row
}

// sink is one output (no file for standard output); w is nil once flushed and closed.
type sink struct {
	f       *os.File // renamed to path by commit, unless inPlace (createOutput)
	inPlace bool
	path    string
	bw      *bufio.Writer
	w       store.ExportWriter
}

// path returns the output file of a row of region captured at (UTC) day.
func (x *sinks) path(region, day string) string {
	switch {
	case len(x.Partition) > 0:
		parts := []string{x.Dir}
		for _, p := range x.Partition {
			if p == "region" {
				parts = append(parts, "region="+region)
			} else {
				parts = append(parts, "date="+day)
			}
		}
		return filepath.Join(append(parts, "part-0."+x.Format.Format)...)
	case x.Dir != "" && x.Format.Format != "csv": // the datasets' names: US.jsonl, USvideos.csv, ...
		return filepath.Join(x.Dir, region+"."+x.Format.Format)
	case x.Dir != "" && x.Format.Layout == store.LayoutTrendingDaily:
		return filepath.Join(x.Dir, region+"_youtube_trending_data.csv")
	case x.Dir != "":
		return filepath.Join(x.Dir, region+"videos.csv")
	}
	return x.File
}

// writer returns the writer of a row of region captured at at; opening an output finishes the
// one before (its rows came together: Export's GroupBy; a Parquet writer buffers a row group).
func (x *sinks) writer(region string, at time.Time) (store.ExportWriter, error) {
	path := x.path(region, at.UTC().Format(time.DateOnly))
	if x.last != nil && x.last.path == path {
		return x.last.w, nil
	}
	if x.open[path] != nil {
		return nil, fmt.Errorf("cannot export: rows of %s came after another output's (out of order)", path)
	}
	if x.last != nil {
		if err := x.last.finish(); err != nil {
			return nil, err
		}
	}
	s := &sink{path: path}
	out := x.Stdout
	var err error
	if path != "" {
		if x.Dir != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
		}
		if s.f, s.inPlace, err = createOutput(path); err != nil {
			return nil, x.outputError(path, err)
		}
		out = s.f
		x.open[path] = s // abort removes it from here on
	}
	s.bw = bufio.NewWriterSize(out, 256<<10)
	if s.w, err = store.NewExportWriter(s.bw, x.Format); err != nil {
		return nil, err
	}
	x.open[path], x.last = s, s
	return s.w, nil
}

// finish flushes s and closes its file (renamed later by commit), letting its buffers go.
func (s *sink) finish() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	s.w, s.bw = nil, nil
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// commit finishes every output and renames the files into place; with no row at all, standard
// output or the one file still gets its header.
func (x *sinks) commit() error {
	if len(x.open) == 0 && x.Dir == "" {
		if _, err := x.writer("", time.Time{}); err != nil {
			return err
		}
	}
	for _, s := range x.open {
		if s.w != nil {
			if err := s.finish(); err != nil {
				return err
			}
		}
	}
	for _, s := range x.open {
		if s.f != nil && !s.inPlace {
			if err := os.Rename(s.f.Name(), s.path); err != nil {
				return err
			}
			s.f = nil
		}
	}
	return nil
}

// abort closes the files not finished and removes the temporary ones not renamed.
func (x *sinks) abort() {
	for _, s := range x.open {
		if s.f != nil {
			if s.w != nil { // finish closed the others
				s.f.Close()
			}
			if !s.inPlace {
				os.Remove(s.f.Name())
			}
		}
	}
}

// createOutput opens the file an export writes to path: for a new path or a regular file a
// temporary one beside it (mode 0644) that commit renames; anything else in place (inPlace), as
// a shell's > does (a FIFO, a device, /dev/stdout: replacing would destroy the node).
func createOutput(path string) (f *os.File, inPlace bool, err error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // a directory: EISDIR
		return f, true, err
	}
	f, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err == nil {
		if err = f.Chmod(0o644); err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	return f, false, err
}
