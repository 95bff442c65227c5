package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// chartOptions is what `chart` was asked (its flags) and where it writes.
type chartOptions struct {
	io                      ioStreams
	engine                  *engine.Engine
	region, at, kind, query string
	runID                   int64
	asJSON, asCSV, partial  bool
}

// newChartCmd is `chart`: its flags fill the options chartRun runs.
func newChartCmd(a *app) *cobra.Command {
	o := &chartOptions{}
	cmd := &cobra.Command{
		Use:   "chart --region R [--at TIME | --run ID] [--partial]",
		Short: "Show a stored chart of a region: rank order, with the statistics of that moment",
		Long: `Show the complete capture of a region's chart in force at a time (the latest
captured at or before it; default: the latest), or the one a run fetched, in
rank order with the views, likes and comments the API gave at that moment.
Reads the local database only, in one snapshot; costs no quota.`,
		Example: "  trendfetch chart --region US\n  trendfetch chart --region JP --at 2026-03-02 --json\n  trendfetch chart --region US --kind category --query 10 --csv",
		Args:    cobra.NoArgs,
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.io, o.engine = a.ioStreams, a.engine()
			return chartRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.region, "region", "", "region code, e.g. US (required)")
	f.StringVar(&o.at, "at", "", "the capture in force at this time (RFC 3339, or a UTC date: through its end); default the latest")
	f.Int64Var(&o.runID, "run", 0, "the capture fetched by this run (see trendfetch runs)")
	f.BoolVar(&o.partial, "partial", false, "also partial captures (a run in progress or stopped before its last page; marked partial)")
	f.StringVar(&o.kind, "kind", store.KindChart, "chart, category (narrowed by --query CATEGORY_ID) or search (--query Q)")
	f.StringVar(&o.query, "query", "", "the category id of --kind category, or the search.list q (config searches) of --kind search")
	f.BoolVar(&o.asJSON, "json", false, "print the capture and its entries as JSON (null = unknown)")
	f.BoolVar(&o.asCSV, "csv", false, "print the entries as CSV (empty = unknown)")
	return cmd
}

// chartRun reads the capture o asks for and prints it as JSON, CSV or a table.
func chartRun(ctx context.Context, o *chartOptions) error {
	q, err := o.captureQuery()
	if err != nil {
		return err
	}
	st, err := o.engine.OpenStore(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	c, entries, err := st.CaptureAt(ctx, q)
	switch {
	case err != nil:
		return err
	case o.asJSON:
		return o.io.printJSON(struct {
			Capture store.Capture `json:"capture"`
			Entries []store.Entry `json:"entries"`
		}{c, entries})
	case o.asCSV:
		return printChartCSV(o.io, entries)
	}
	return printChart(o.io, c, entries)
}

// captureQuery is the capture of o's flags; a flag that does not parse or
// fit the others is a usage error.
func (o *chartOptions) captureQuery() (store.CaptureQuery, error) {
	q := store.CaptureQuery{Kind: o.kind, Query: o.query, RunID: o.runID, Partial: o.partial}
	if o.region == "" {
		return q, usagef("trendfetch chart --region US", "--region is required")
	}
	r, err := parseRegion(o.region)
	if err != nil {
		return q, err
	}
	q.Region = r
	if err := o.checkKind(); err != nil {
		return q, err
	}
	switch {
	case o.at != "" && o.runID != 0:
		return q, usagef("trendfetch chart --region US --run 12", "--at and --run select a capture each: give one")
	case o.runID < 0:
		return q, usagef("trendfetch runs", "--run %d: must be a run id from `trendfetch runs`", o.runID)
	case o.asJSON && o.asCSV:
		return q, usagef("trendfetch chart --region US --json", "--json and --csv: give one")
	}
	if o.at != "" {
		if q.At, err = store.ParseAt(o.at); err != nil {
			return q, usagef("trendfetch chart --region US --at 2026-03-02T08:00:00Z", "--at %q: %v", o.at, err)
		}
	}
	return q, nil
}

// checkKind refuses a --kind that does not exist, or a --query it does not take.
func (o *chartOptions) checkKind() error {
	switch o.kind {
	case store.KindChart:
		if o.query != "" {
			return usagef("trendfetch chart --region US --kind category --query 10", "--query %q: a chart has no query; use --kind category or search", o.query)
		}
	case store.KindCategory, store.KindSearch:
		if o.query == "" {
			return usagef("trendfetch chart --region US --kind "+o.kind+" --query ...", "--kind %s needs --query", o.kind)
		}
	default:
		return usagef("trendfetch chart --region US --kind chart", "--kind %q: must be chart, category or search", o.kind)
	}
	return nil
}

// printChartCSV writes entries as CSV (empty = unknown).
func printChartCSV(s ioStreams, entries []store.Entry) error {
	w := csv.NewWriter(s.stdout)
	_ = w.Write([]string{"rank", "video_id", "title", "channel_title", "view_count", "like_count", "comment_count"})
	for _, e := range entries {
		_ = w.Write([]string{strconv.Itoa(e.Rank), e.VideoID, e.Title, e.ChannelTitle, csvInt(e.Views), csvInt(e.Likes), csvInt(e.Comments)})
	}
	w.Flush()
	return w.Error()
}

// printChart writes capture c and its entries for people: a title line, then a table.
func printChart(s ioStreams, c store.Capture, entries []store.Entry) error {
	state := "complete"
	if !c.Complete {
		state = "PARTIAL: the run stopped before its last page"
	}
	what := c.Kind
	if c.Query != "" {
		what += " " + strconv.Quote(c.Query)
	}
	// One buffered write: the scrubbing stdout costs per Write call.
	bw := bufio.NewWriterSize(s.stdout, 64<<10)
	fmt.Fprintf(bw, "%s %s captured %s (run %d, %d videos, %s)\n", c.Region, what,
		c.CapturedAt.UTC().Format("2006-01-02 15:04 MST"), c.RunID, len(entries), state)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RANK\tVIEWS\tLIKES\tCOMMENTS\t\tTITLE — CHANNEL\t")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\t%s\n", e.Rank, humanInt(e.Views), humanInt(e.Likes), humanInt(e.Comments),
			termtext.Safe(e.Title+" — "+e.ChannelTitle))
	}
	tw.Flush() // a failed write is bw's error
	return bw.Flush()
}
