package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
)

// exportOptions is what `export` was asked (its flags) and where it writes.
type exportOptions struct {
	io                                          ioStreams
	engine                                      *engine.Engine
	format, layout, every, since, until, output string
	regions, partition                          []string
	noDescription, regionColumn, safe           bool
	layoutSet                                   bool // --layout given (refused with jsonl and parquet)
}

// newExportCmd is `export`: its flags fill the options exportRun runs.
func newExportCmd(a *app) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Stream the stored charts as the public trending datasets' CSV, JSON Lines or Parquet",
		Long:  exportLong,
		Example: "  trendfetch export --layout youtube-new --region US --since 2026-01-01 > us.csv\n" +
			"  trendfetch export --layout trending-daily --output datasets/\n" +
			"  trendfetch export --format jsonl --every capture --output all.jsonl",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine, o.layoutSet = a.ioStreams, a.engine(), cmd.Flags().Changed("layout")
			return exportRun(cmd.Context(), o)
		},
	}
	addExportFlags(cmd.Flags(), o)
	return cmd
}

// addExportFlags declares export's flags into o.
func addExportFlags(f *pflag.FlagSet, o *exportOptions) {
	f.StringVar(&o.format, "format", "csv", "csv, jsonl or parquet")
	f.StringSliceVar(&o.partition, "partition", nil, "with --output DIR/: hive-style directories by region and/or UTC date (region=US/date=2026-11-24/part-0.parquet)")
	f.StringVar(&o.layout, "layout", store.LayoutYoutubeNew, `CSV columns: youtube-new (Kaggle 2017) or trending-daily (2018 scraper / 2020 "updated daily")`)
	f.StringSliceVar(&o.regions, "region", nil, "only these regions (repeatable or comma-separated; default all)")
	f.StringVar(&o.since, "since", "", "captures at or after this time (RFC 3339 or UTC date)")
	f.StringVar(&o.until, "until", "", "captures at or before this time (RFC 3339, or a UTC date: through its end)")
	f.StringVar(&o.every, "every", "day", "day (the datasets' one row a day: each region's last complete capture of a UTC day) or capture (all, partial too)")
	f.StringVar(&o.output, "output", "", "write to FILE (replaced when complete), or one file per region into DIR/, instead of standard output")
	f.BoolVar(&o.noDescription, "no-description", false, "leave descriptions empty (smaller, faster)")
	f.BoolVar(&o.regionColumn, "region-column", false, "CSV: add a region column (needed to put several regions in one file)")
	f.BoolVar(&o.safe, "spreadsheet-safe", false, "CSV: prefix cells starting with = + - @ tab or CR with ' (OWASP CSV injection; see --help)")
}

// exportLong is export's --help text.
const exportLong = `Stream every stored chart capture (kind chart), oldest first, in rank order,
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
it (the file then differs from the datasets' bytes).`

// exportRun checks o's flags, then streams the export; a reader of
// standard output that stops early (export | head) ends it quietly.
func exportRun(ctx context.Context, o *exportOptions) error {
	x, err := o.export()
	if err != nil {
		return err
	}
	if o.format == "parquet" {
		store.LimitParquetMemory()
	}
	st, err := o.engine.OpenStore(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if x.ToStdout() {
		signal.Ignore(syscall.SIGPIPE) // EPIPE below, not death by SIGPIPE
	}
	rows := 0
	x.Row = o.progress(&rows)
	err = o.engine.Export(ctx, st, x)
	if o.io.stderrTTY {
		fmt.Fprintf(o.io.stderr, "\rexported %d rows\n", rows)
	}
	if x.ToStdout() && errors.Is(err, syscall.EPIPE) {
		return nil // the reader has what it wanted
	}
	return err
}

// progress counts rows and shows "exported N rows" on a terminal, at most twice a second.
func (o *exportOptions) progress(rows *int) func() {
	last := time.Now()
	return func() {
		if *rows++; o.io.stderrTTY && *rows%4096 == 0 && time.Since(last) > 500*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(o.io.stderr, "\rexported %d rows", *rows)
		}
	}
}

// export is the engine's export of o's flags; a flag that does not parse or fit the format is
// a usage error.
func (o *exportOptions) export() (engine.Export, error) {
	if err := o.checkFormat(); err != nil {
		return engine.Export{}, err
	}
	q, err := o.query()
	return engine.Export{Query: q, Output: o.output, Partition: o.partition, Stdout: o.io.stdout, Terminal: o.io.stdoutTTY,
		Format: store.ExportFormat{Format: o.format, Layout: o.layout, PerCapture: o.every == "capture",
			NoDescription: o.noDescription, RegionColumn: o.regionColumn, SpreadsheetSafe: o.safe}}, err
}

// checkFormat refuses a --format, --layout or --partition that does not exist or fit the format.
func (o *exportOptions) checkFormat() error {
	switch o.format {
	case "csv":
		if o.layout != store.LayoutYoutubeNew && o.layout != store.LayoutTrendingDaily {
			return usagef("trendfetch export --format csv --layout youtube-new", "--layout %q: must be youtube-new or trending-daily", o.layout)
		}
	case "jsonl", "parquet":
		if o.layoutSet {
			return usagef("trendfetch export --format "+o.format, "--layout %q: only for --format csv (%s has its own columns)", o.layout, o.format)
		}
		if o.safe || o.regionColumn {
			return usagef("trendfetch export --format "+o.format, "--spreadsheet-safe and --region-column are for --format csv (%s always has region)", o.format)
		}
	default:
		return usagef("trendfetch export --format csv", "--format %q: must be csv, jsonl or parquet", o.format)
	}
	list := "," + strings.Join(o.partition, ",") + ","
	for _, p := range o.partition {
		if p != "region" && p != "date" || strings.Count(list, ","+p+",") > 1 {
			return usagef("trendfetch export --format parquet --partition region,date --output DIR/", "--partition %q: must be region, date or region,date", strings.Join(o.partition, ","))
		}
	}
	return nil
}

// query is the captures of --every, --region, --since and --until.
func (o *exportOptions) query() (store.ExportQuery, error) {
	q := store.ExportQuery{NoDescription: o.noDescription, EveryDay: o.every == "day"}
	if o.every != "day" && o.every != "capture" {
		return q, usagef("trendfetch export --every day", "--every %q: must be capture or day", o.every)
	}
	var err error
	if q.Regions, err = regions.ParseList(o.regions); err != nil {
		return q, &usageError{Err: err, Hint: "trendfetch regions"}
	}
	if o.since != "" {
		if q.Since, err = store.ParseAt(o.since); err != nil {
			return q, usagef("trendfetch export --since 2026-01-01", "--since %q: %v", o.since, err)
		} else if len(o.since) == len(time.DateOnly) { // a date: from its start, not its end
			q.Since = q.Since.Truncate(24 * time.Hour)
		}
	}
	if o.until != "" {
		if q.Until, err = store.ParseAt(o.until); err != nil {
			return q, usagef("trendfetch export --until 2026-01-31", "--until %q: %v", o.until, err)
		}
	}
	return q, nil
}
