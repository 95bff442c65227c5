package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
)

// Export is one export: what to read, how to write it, and where.
type Export struct {
	// Query selects the captures (Export sets its GroupBy).
	Query store.ExportQuery
	// Format is the file format and its options.
	Format store.ExportFormat
	// Dir, when set, receives one file per region (dataset file names) or,
	// with Partition, hive-style directories.
	Dir string
	// Partition is "region" and/or "date" (UTC day), with Dir.
	Partition []string
	// File, when set (and Dir not), is the one output file; else Stdout.
	File string
	// Stdout is the output when neither Dir nor File is set.
	Stdout io.Writer
	// OneRegion refuses a second region (one CSV without a region column).
	OneRegion bool
	// Row, when set, is called after each row (progress).
	Row func()
}

// OutputError is an output that cannot be created (a directory or a
// temporary file of Export): the output setting is wrong.
type OutputError struct {
	Path string
	Err  error
}

// Error is "PATH: PROBLEM".
func (e *OutputError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *OutputError) Unwrap() error { return e.Err }

// Export writes the rows of x.Query from st (one read snapshot) to x's
// outputs. Files are written under a temporary name in their directory and
// renamed into place when every row is written: a failed export leaves no
// partial file and an existing file keeps its content (a FIFO, a device or
// a symbolic link is written in place, createOutput). One output is open
// at a time, whatever the number of regions and days.
func (e *Engine) Export(ctx context.Context, st store.Backend, x Export) error {
	if x.Dir != "" {
		if err := os.MkdirAll(x.Dir, 0o755); err != nil {
			return &OutputError{Path: x.Dir, Err: err}
		}
	}
	// Each output's rows must come together (sinks.writer): region by
	// region for outputs per region and for Parquet (a row group then
	// holds one region's charts: smaller dictionaries), day by day for
	// date partitions alone (each day region by region).
	q := x.Query
	switch {
	case slices.Equal(x.Partition, []string{"date"}):
		q.GroupBy = []string{"date", "region"}
	case x.Format.Format == "parquet" || x.Dir != "":
		q.GroupBy = []string{"region"}
	}
	s := &sinks{format: x.Format, dir: x.Dir, partition: x.Partition, file: x.File, stdout: x.Stdout, open: map[string]*sink{}}
	if x.Dir != "" {
		s.file = ""
	}
	first := ""
	err := st.Export(ctx, q, func(r *store.ExportRow) error {
		if x.OneRegion && r.Region != first {
			if first != "" {
				return fmt.Errorf("cannot write a second region (%s after %s) to one CSV; use --output DIR/ or --region-column", r.Region, first)
			}
			first = r.Region
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

// sinks holds the outputs of one export: standard output, one file, one
// file per region in a directory, or hive-style partitions.
type sinks struct {
	format    store.ExportFormat
	dir       string   // one file per region or partition, or ""
	partition []string // "region", "date"
	file      string   // one file, or "" (standard output)
	stdout    io.Writer
	open      map[string]*sink // by path ("" for standard output)
	last      *sink            // the output of the last row
}

// sink is one output: its temporary file (nil for standard output), buffer
// and writer; w is nil once the sink is flushed and closed.
type sink struct {
	tmp    *os.File // renamed to path by commit
	direct *os.File // path itself, written in place (createOutput)
	path   string
	bw     *bufio.Writer
	w      store.ExportWriter
}

// datasetFile is the file name of region's rows in a dataset layout:
// USvideos.csv (youtube-new), US_youtube_trending_data.csv
// (trending-daily); US.jsonl, US.parquet.
func datasetFile(f store.ExportFormat, region string) string {
	switch {
	case f.Format != "csv":
		return region + "." + f.Format
	case f.Layout == store.LayoutTrendingDaily:
		return region + "_youtube_trending_data.csv"
	}
	return region + "videos.csv"
}

// path returns the output file of a row of region captured at (UTC) day.
func (x *sinks) path(region, day string) string {
	switch {
	case len(x.partition) > 0:
		parts := []string{x.dir}
		for _, p := range x.partition {
			if p == "region" {
				parts = append(parts, "region="+region)
			} else {
				parts = append(parts, "date="+day)
			}
		}
		return filepath.Join(append(parts, "part-0."+x.format.Format)...)
	case x.dir != "":
		return filepath.Join(x.dir, datasetFile(x.format, region))
	}
	return x.file
}

// writer returns the writer of a row of region captured at at, opening its
// output first. The rows of one output come together (Export sets
// GroupBy so), so opening an output finishes the one before: one output
// is open at a time (a Parquet writer buffers a row group).
func (x *sinks) writer(region string, at time.Time) (store.ExportWriter, error) {
	path := x.path(region, at.UTC().Format(time.DateOnly))
	if x.last != nil && x.last.path == path {
		return x.last.w, nil
	}
	if s := x.open[path]; s != nil {
		return nil, fmt.Errorf("cannot export: rows of %s came after another output's (out of order)", path)
	}
	if x.last != nil {
		if err := x.last.finish(); err != nil {
			return nil, err
		}
	}
	s := &sink{path: path}
	out := x.stdout
	if path != "" {
		if x.dir != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
		}
		f, inPlace, err := createOutput(path)
		if err != nil {
			return nil, &OutputError{Path: path, Err: err}
		}
		out = f
		if inPlace {
			s.direct = f
		} else {
			s.tmp = f
		}
		x.open[path] = s // abort removes it from here on
	}
	s.bw = bufio.NewWriterSize(out, 256<<10)
	w, err := store.NewExportWriter(s.bw, x.format)
	if err != nil {
		return nil, err
	}
	s.w = w
	x.open[path], x.last = s, s
	return w, nil
}

// finish flushes s and closes its file (renamed later by commit). It lets
// its writer and buffer go: x.open keeps every output until commit.
func (s *sink) finish() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	s.w, s.bw = nil, nil
	if s.tmp != nil {
		return s.tmp.Close()
	}
	if s.direct != nil {
		f := s.direct
		s.direct = nil
		return f.Close()
	}
	return nil
}

// commit finishes every output and renames the files into place. With no
// row at all, standard output or the one file still gets its header.
func (x *sinks) commit() error {
	if len(x.open) == 0 && x.dir == "" {
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
		if s.tmp != nil {
			if err := os.Rename(s.tmp.Name(), s.path); err != nil {
				return err
			}
			s.tmp = nil
		}
	}
	return nil
}

// abort removes the temporary files not renamed yet.
func (x *sinks) abort() {
	for _, s := range x.open {
		if s.tmp != nil {
			s.tmp.Close()
			os.Remove(s.tmp.Name())
		}
		if s.direct != nil {
			s.direct.Close()
		}
	}
}

// createOutput opens the file an export writes to path. A new path or a
// regular file is written under a temporary name in its directory (mode
// 0644), which commit renames to path; anything else is written in place
// (inPlace), as a shell's > does: a FIFO, a device such as /dev/null, or a
// symbolic link such as /dev/stdout or a process substitution's /dev/fd/N
// (replacing those would destroy the node, or leave the reader nothing).
// A directory is refused ("is a directory").
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
