package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
)

func newExportCmd(a *app) *cobra.Command {
	var (
		format, layout, every, since, until, output string
		regionList, partition                       []string
		noDescription, regionColumn, safe           bool
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Stream the stored charts as the public trending datasets' CSV, JSON Lines or Parquet",
		Long: `Stream every stored chart capture (kind chart), oldest first, in rank order,
with the statistics and video text (title, description, tags, channel title,
category, thumbnail) of its moment, from one snapshot of the database (runs or
a prune meanwhile change nothing) in constant memory. Costs no quota.

CSV layouts: youtube-new has trending_date as yy.dd.mm, tags "a"|"b" or [none]
and newlines in descriptions as \n; trending-daily an ISO trending_date and tags
a|b or [None]; --every capture adds captured_at and rank columns to both.
--format jsonl writes every field, one JSON object a line, with region,
captured_at, rank and complete; null for unknown values. --format parquet
writes the same fields as typed columns (docs/schema.md), zstd-compressed,
region by region (each oldest first): a row group holds one region's charts.

--output DIR/ writes one file per region, as the datasets do, under their names
(USvideos.csv, US_youtube_trending_data.csv; US.jsonl); a CSV of several regions
in one file or on standard output needs --region-column. --output FILE is
renamed into place when complete (a failed export leaves no partial file); a
FIFO, a device, /dev/stdout or another symbolic link is written in place.

Values are written as the datasets do: dislikes 0 (gone from the API since
2021-12-13), video_error_or_removed False, a like or comment count the owner
hid (the API omits it; stored as unknown) 0 with ratings_disabled or
comments_disabled True. A statistic the store does not know (charts stored
before statistics were kept) is an empty CSV field (JSON Lines: null for both).
Descriptions keep the API's line breaks (CRLF stays CRLF). Times are UTC.

Text is written as typed, like the datasets; a spreadsheet runs a cell starting
with = + - @ tab or CR as a formula (OWASP "CSV Injection"), so a title could
fetch URLs or run commands on the analyst's machine: --spreadsheet-safe defuses
it (the file then differs from the datasets' bytes).`,
		Example: "  trendfetch export --layout youtube-new --region US --since 2026-01-01 > us.csv\n" +
			"  trendfetch export --layout trending-daily --output datasets/\n" +
			"  trendfetch export --format jsonl --every capture --output all.jsonl",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := store.ExportQuery{NoDescription: noDescription, EveryDay: every == "day"}
			switch format {
			case "csv":
				if layout != store.LayoutYoutubeNew && layout != store.LayoutTrendingDaily {
					return usagef("trendfetch export --format csv --layout youtube-new", "--layout %q: must be youtube-new or trending-daily", layout)
				}
			case "jsonl", "parquet":
				if cmd.Flags().Changed("layout") {
					return usagef("trendfetch export --format "+format, "--layout %q: only for --format csv (%s has its own columns)", layout, format)
				}
				if safe || regionColumn {
					return usagef("trendfetch export --format "+format, "--spreadsheet-safe and --region-column are for --format csv (%s always has region)", format)
				}
			default:
				return usagef("trendfetch export --format csv", "--format %q: must be csv, jsonl or parquet", format)
			}
			if format == "parquet" {
				store.LimitParquetMemory()
			}
			for _, p := range partition {
				if p != "region" && p != "date" || strings.Count(","+strings.Join(partition, ",")+",", ","+p+",") > 1 {
					return usagef("trendfetch export --format parquet --partition region,date --output DIR/", "--partition %q: must be region, date or region,date", strings.Join(partition, ","))
				}
			}
			if every != "day" && every != "capture" {
				return usagef("trendfetch export --every day", "--every %q: must be capture or day", every)
			}
			var err error
			if q.Regions, err = regions.ParseList(regionList); err != nil {
				return &usageError{Err: err, Hint: "trendfetch regions"}
			}
			if since != "" {
				if q.Since, err = store.ParseAt(since); err != nil {
					return usagef("trendfetch export --since 2026-01-01", "--since %q: %v", since, err)
				} else if len(since) == len(time.DateOnly) { // a date: from its start, not its end
					q.Since = q.Since.Truncate(24 * time.Hour)
				}
			}
			if until != "" {
				if q.Until, err = store.ParseAt(until); err != nil {
					return usagef("trendfetch export --until 2026-01-31", "--until %q: %v", until, err)
				}
			}
			var dir, file string // both "": standard output
			if output != "" && output != "-" {
				file = output
				if fi, err := os.Stat(output); (err == nil && fi.IsDir()) || os.IsPathSeparator(output[len(output)-1]) {
					dir, file = output, ""
				}
			}
			if len(partition) > 0 && dir == "" {
				return usagef("trendfetch export --format parquet --partition region,date --output DIR/", "--partition needs --output DIR/ (a directory)")
			}
			st, err := a.engine().OpenStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer st.Close()
			x := engine.Export{Query: q, Dir: dir, File: file, Partition: partition, Stdout: a.stdout,
				Format: store.ExportFormat{Format: format, Layout: layout, PerCapture: every == "capture",
					NoDescription: noDescription, RegionColumn: regionColumn, SpreadsheetSafe: safe},
				OneRegion: format == "csv" && dir == "" && !regionColumn}
			if x.OneRegion {
				rs, err := st.ExportRegions(cmd.Context(), q)
				if err != nil {
					return err
				}
				if len(rs) > 1 {
					return usagef("trendfetch export --output DIR/",
						"cannot write %d regions (%s) to one CSV without a region column: use --output DIR/ (one file per region) or --region-column", len(rs), strings.Join(rs, ","))
				}
			}
			if file == "" && dir == "" && format == "parquet" && a.stdoutTTY {
				return usagef("trendfetch export --format parquet --output charts.parquet", "--format parquet writes binary: not to a terminal; use --output FILE or redirect standard output")
			}
			if file == "" && dir == "" {
				// Standard output: a reader that stops early (export | head)
				// ends the export quietly (EPIPE below), not by SIGPIPE.
				signal.Ignore(syscall.SIGPIPE)
			}
			// "exported N rows" on a terminal, at most twice a second.
			rows, last := 0, time.Now()
			x.Row = func() {
				if rows++; a.stderrTTY && rows%4096 == 0 && time.Since(last) > 500*time.Millisecond {
					last = time.Now()
					fmt.Fprintf(a.stderr, "\rexported %d rows", rows)
				}
			}
			err = a.engine().Export(cmd.Context(), st, x)
			if a.stderrTTY {
				fmt.Fprintf(a.stderr, "\rexported %d rows\n", rows)
			}
			if file == "" && dir == "" && errors.Is(err, syscall.EPIPE) {
				return nil // the reader has what it wanted
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "csv", "csv, jsonl or parquet")
	f.StringSliceVar(&partition, "partition", nil, "with --output DIR/: hive-style directories by region and/or UTC date (region=US/date=2026-11-24/part-0.parquet)")
	f.StringVar(&layout, "layout", store.LayoutYoutubeNew, `CSV columns: youtube-new (Kaggle 2017) or trending-daily (2018 scraper / 2020 "updated daily")`)
	f.StringSliceVar(&regionList, "region", nil, "only these regions (repeatable or comma-separated; default all)")
	f.StringVar(&since, "since", "", "captures at or after this time (RFC 3339 or UTC date)")
	f.StringVar(&until, "until", "", "captures at or before this time (RFC 3339, or a UTC date: through its end)")
	f.StringVar(&every, "every", "day", "day (the datasets' one row a day: each region's last complete capture of a UTC day) or capture (all, partial too)")
	f.StringVar(&output, "output", "", "write to FILE (replaced when complete), or one file per region into DIR/, instead of standard output")
	f.BoolVar(&noDescription, "no-description", false, "leave descriptions empty (smaller, faster)")
	f.BoolVar(&regionColumn, "region-column", false, "CSV: add a region column (needed to put several regions in one file)")
	f.BoolVar(&safe, "spreadsheet-safe", false, "CSV: prefix cells starting with = + - @ tab or CR with ' (OWASP CSV injection; see --help)")
	return cmd
}
