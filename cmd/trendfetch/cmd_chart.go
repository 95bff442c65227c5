package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newChartCmd(a *app) *cobra.Command {
	var (
		region, at, kind, query string
		runID                   int64
		asJSON, asCSV, partial  bool
	)
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
			if region == "" {
				return usagef("trendfetch chart --region US", "--region is required")
			}
			r, err := parseRegion(region)
			if err != nil {
				return err
			}
			q := store.CaptureQuery{Region: r, Kind: kind, Query: query, RunID: runID, Partial: partial}
			switch kind {
			case store.KindChart:
				if query != "" {
					return usagef("trendfetch chart --region US --kind category --query 10", "--query %q: a chart has no query; use --kind category or search", query)
				}
			case store.KindCategory, store.KindSearch:
				if query == "" {
					return usagef("trendfetch chart --region US --kind "+kind+" --query ...", "--kind %s needs --query", kind)
				}
			default:
				return usagef("trendfetch chart --region US --kind chart", "--kind %q: must be chart, category or search", kind)
			}
			if at != "" && runID != 0 {
				return usagef("trendfetch chart --region US --run 12", "--at and --run select a capture each: give one")
			}
			if runID < 0 {
				return usagef("trendfetch runs", "--run %d: must be a run id from `trendfetch runs`", runID)
			}
			if asJSON && asCSV {
				return usagef("trendfetch chart --region US --json", "--json and --csv: give one")
			}
			if at != "" {
				if q.At, err = store.ParseAt(at); err != nil {
					return usagef("trendfetch chart --region US --at 2026-03-02T08:00:00Z", "--at %q: %v", at, err)
				}
			}
			st, err := a.engine().OpenStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer st.Close()
			c, entries, err := st.CaptureAt(cmd.Context(), q)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return a.printJSON(struct {
					Capture store.Capture `json:"capture"`
					Entries []store.Entry `json:"entries"`
				}{c, entries})
			case asCSV:
				w := csv.NewWriter(a.stdout)
				_ = w.Write([]string{"rank", "video_id", "title", "channel_title", "view_count", "like_count", "comment_count"})
				for _, e := range entries {
					_ = w.Write([]string{strconv.Itoa(e.Rank), e.VideoID, e.Title, e.ChannelTitle, csvInt(e.Views), csvInt(e.Likes), csvInt(e.Comments)})
				}
				w.Flush()
				return w.Error()
			}
			state := "complete"
			if !c.Complete {
				state = "PARTIAL: the run stopped before its last page"
			}
			what := c.Kind
			if c.Query != "" {
				what += " " + strconv.Quote(c.Query)
			}
			// One buffered write: the scrubbing stdout costs per Write call.
			bw := bufio.NewWriterSize(a.stdout, 64<<10)
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
		},
	}
	f := cmd.Flags()
	f.StringVar(&region, "region", "", "region code, e.g. US (required)")
	f.StringVar(&at, "at", "", "the capture in force at this time (RFC 3339, or a UTC date: through its end); default the latest")
	f.Int64Var(&runID, "run", 0, "the capture fetched by this run (see trendfetch runs)")
	f.BoolVar(&partial, "partial", false, "also partial captures (a run in progress or stopped before its last page; marked partial)")
	f.StringVar(&kind, "kind", store.KindChart, "chart, category (narrowed by --query CATEGORY_ID) or search (--query Q)")
	f.StringVar(&query, "query", "", "the category id of --kind category, or the search.list q (config searches) of --kind search")
	f.BoolVar(&asJSON, "json", false, "print the capture and its entries as JSON (null = unknown)")
	f.BoolVar(&asCSV, "csv", false, "print the entries as CSV (empty = unknown)")
	return cmd
}

// csvInt writes a statistic for CSV: empty when unknown.
func csvInt(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// humanInt writes a statistic for people: "-" when unknown, else grouped
// by thousands (1,234,567).
func humanInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return termtext.Thousands(*p)
}

// table starts an aligned table on w (columns two spaces apart) with its header line.
func table(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}
