package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
)

func newExportCmd(a *app) *cobra.Command {
	var (
		format, layout, every, since, until, output string
		regionList                                  []string
		noDescription                               bool
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Stream the stored charts in the public trending datasets' layouts or as JSON Lines",
		Long: `Stream every stored chart capture (kind chart), oldest first, in rank order,
with the statistics of its moment. Memory stays constant whatever the size.

--format csv writes one of the public datasets' layouts:
  --layout youtube-new     the Kaggle "youtube-new" 2017 columns (trending_date as
                           yy.dd.mm, tags "a"|"b" or [none], newlines in
                           descriptions as \n)
  --layout trending-daily  the 2018 scraper / 2020 "updated daily" columns
                           (ISO trending_date, tags a|b or [None])
--format jsonl writes every field, one JSON object a line, with region,
captured_at, rank and complete; null for unknown values.

--every day (the datasets' one row per video per day) keeps each region's last
complete capture of each UTC day; --every capture keeps all captures, partial
ones included, and adds captured_at and rank columns to the CSV layouts.

Values are written as the datasets do: dislikes 0 (gone from the API since
2021-12-13) and video_error_or_removed False; a like or comment count the
owner hid (the API omits it; stored as unknown) is 0 with ratings_disabled
or comments_disabled True. A statistic the store does not know (charts
stored before statistics were kept) is an empty CSV field; JSON Lines
writes null for both. Times are UTC.
Costs no quota.`,
		Example: "  trendfetch export --layout youtube-new --region US --since 2026-01-01 > us.csv\n  trendfetch export --format jsonl --every capture --output all.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := store.ExportQuery{NoDescription: noDescription}
			switch format {
			case "csv":
				if layout != store.LayoutYoutubeNew && layout != store.LayoutTrendingDaily {
					return usagef("trendfetch export --format csv --layout youtube-new", "--layout %q: must be youtube-new or trending-daily", layout)
				}
			case "jsonl":
			default:
				return usagef("trendfetch export --format csv", "--format %q: must be csv or jsonl", format)
			}
			switch every {
			case "day":
				q.EveryDay = true
			case "capture":
			default:
				return usagef("trendfetch export --every day", "--every %q: must be capture or day", every)
			}
			rs, err := regions.ParseList(regionList)
			if err != nil {
				return &usageError{err: err, hint: "trendfetch regions"}
			}
			q.Regions = rs
			if since != "" {
				if q.Since, err = parseSince(since); err != nil {
					return usagef("trendfetch export --since 2026-01-01", "--since %q: %v", since, err)
				}
			}
			if until != "" {
				if q.Until, err = config.ParseAt(until); err != nil {
					return usagef("trendfetch export --until 2026-01-31", "--until %q: %v", until, err)
				}
			}
			st, err := a.loadReadStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()

			out := a.stdout
			var file *os.File
			if output != "" && output != "-" {
				if file, err = os.Create(output); err != nil {
					return usagef("trendfetch export --output FILE", "--output %s: %v", output, err)
				}
				defer file.Close()
				out = file
			}
			bw := bufio.NewWriterSize(out, 256<<10)
			w, err := store.NewExportWriter(bw, store.ExportFormat{Format: format, Layout: layout, PerCapture: every == "capture", NoDescription: noDescription})
			if err != nil {
				return &usageError{err: err, hint: "trendfetch export --help"}
			}
			progress := newProgress(a.stderr, isatty.IsTerminal(os.Stderr.Fd()))
			err = st.Export(cmd.Context(), q, func(r *store.ExportRow) error {
				progress.add()
				return w.Row(r)
			})
			progress.done()
			if err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return fmt.Errorf("cannot write export: %w", err)
			}
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("cannot write export: %w", err)
			}
			if file != nil {
				if err := file.Close(); err != nil {
					return fmt.Errorf("cannot write export: %w", err)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "csv", "csv or jsonl")
	f.StringVar(&layout, "layout", store.LayoutYoutubeNew, "CSV columns: youtube-new (Kaggle 2017) or trending-daily (2018 scraper / 2020)")
	f.StringSliceVar(&regionList, "region", nil, "only these regions (repeatable or comma-separated; default all)")
	f.StringVar(&since, "since", "", "captures at or after this time (RFC 3339 or UTC date)")
	f.StringVar(&until, "until", "", "captures at or before this time (RFC 3339, or a UTC date: through its end)")
	f.StringVar(&every, "every", "day", "day (last complete capture per region and UTC day) or capture (all, with captured_at and rank)")
	f.StringVar(&output, "output", "", "write to FILE instead of standard output")
	f.BoolVar(&noDescription, "no-description", false, "leave descriptions empty (smaller, faster)")
	return cmd
}

// parseSince reads --since: RFC 3339, or a date (UTC) meaning its start.
func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d, nil
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time (2026-03-02T08:00:00Z) or a date (2026-03-02)")
}

// progress prints "exported N rows" on a terminal, at most twice a second.
type progress struct {
	w    io.Writer
	on   bool
	n    int64
	last time.Time
}

func newProgress(w io.Writer, on bool) *progress { return &progress{w: w, on: on, last: time.Now()} }

func (p *progress) add() {
	p.n++
	if p.on && p.n%4096 == 0 && time.Since(p.last) > 500*time.Millisecond {
		p.last = time.Now()
		fmt.Fprintf(p.w, "\rexported %d rows", p.n)
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprintf(p.w, "\rexported %d rows\n", p.n)
	}
}
