package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// searchOptions is what `search` was asked (its flags and words) and where it writes.
type searchOptions struct {
	io     ioStreams
	engine *engine.Engine
	text   string // the query: the arguments joined by spaces
	region string
	limit  int
	asJSON bool
	bold   bool // matches in bold (a terminal without NO_COLOR), else in brackets
}

// newSearchCmd is `search`: its flags fill the options searchRun runs.
func newSearchCmd(a *app) *cobra.Command {
	o := &searchOptions{}
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over everything ingested (local, costs no quota)",
		Long: `Search titles, tags, channel titles and descriptions of every ingested video,
ranked with bm25 (title weighted highest). Words are ANDed; "quoted phrases"
match exactly; a trailing * matches a prefix (e.g. trail*); a OR b matches
either; a leading - excludes a word or phrase (e.g. lofi -live). Japanese,
Chinese, Korean and Thai match as substrings of titles and channel titles.`,
		Example: "  trendfetch search \"bruno mars\"\n  trendfetch search 'official \"music video\"' --region US --limit 5 --json",
		Args:    cobra.MinimumNArgs(1),
		PreRunE: a.withConfig,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.io, o.engine, o.text = a.ioStreams, a.engine(), strings.Join(args, " ")
			o.bold = a.stdoutTTY && os.Getenv("NO_COLOR") == ""
			return searchRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.region, "region", "", "only videos seen in this region's charts")
	cmd.Flags().IntVarP(&o.limit, "limit", "n", store.DefaultSearchLimit, fmt.Sprintf("most results to show (1-%d)", store.MaxSearchLimit))
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print results as JSON")
	return cmd
}

// searchRun prints the videos matching o.text, best first.
func searchRun(ctx context.Context, o *searchOptions) error {
	if o.limit < 1 || o.limit > store.MaxSearchLimit {
		return usagef("trendfetch search QUERY --limit 20", "--limit %d: must be between 1 and %d", o.limit, store.MaxSearchLimit)
	}
	parsed, err := store.ParseSearch(o.text)
	if err != nil {
		return err
	}
	region, st, err := openRegionStore(ctx, o.engine, o.region)
	if err != nil {
		return err
	}
	defer st.Close()
	hits, _, err := st.SearchPage(ctx, store.SearchQuery{Text: o.text, Parsed: parsed, Region: region, Limit: o.limit})
	if err != nil {
		return err
	}
	if o.asJSON {
		return o.io.printJSON(hits)
	}
	printHits(o, hits)
	return nil
}

// printHits writes hits for people, each with its snippet, the matches marked.
func printHits(o *searchOptions, hits []store.Hit) {
	if len(hits) == 0 {
		fmt.Fprintf(o.io.stdout, "no videos match %q\n", termtext.Clip(o.text, 200))
		return
	}
	open, close := "[", "]"
	if o.bold {
		open, close = "\x1b[1m", "\x1b[0m"
	}
	for i, h := range hits {
		fmt.Fprintf(o.io.stdout, "%2d. %s — %s  https://youtu.be/%s\n", i+1, termtext.Safe(h.Title), termtext.Safe(h.ChannelTitle), termtext.Safe(h.VideoID))
		if strings.TrimSpace(h.Snippet) != "" {
			fmt.Fprintf(o.io.stdout, "    %s\n", termtext.Mark(h.Snippet, h.Highlights, open, close))
		}
	}
}
