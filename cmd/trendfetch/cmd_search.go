package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newSearchCmd(a *app) *cobra.Command {
	var (
		region string
		limit  int
		asJSON bool
	)
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
			if limit < 1 || limit > store.MaxSearchLimit {
				return usagef("trendfetch search QUERY --limit 20", "--limit %d: must be between 1 and %d", limit, store.MaxSearchLimit)
			}
			text := strings.Join(args, " ")
			parsed, err := store.ParseSearch(text)
			if err != nil {
				return err
			}
			region, err := parseRegion(region)
			if err != nil {
				return err
			}
			st, err := a.openReadStore(cmd.Context())
			if err != nil {
				return err
			}
			var hits []store.Hit
			if st != nil {
				defer st.Close()
				if hits, _, err = st.SearchPage(cmd.Context(), store.SearchQuery{Text: text, Parsed: parsed, Region: region, Limit: limit}); err != nil {
					return err
				}
			}
			if asJSON {
				return a.printJSON(hits)
			}
			if len(hits) == 0 {
				fmt.Fprintf(a.stdout, "no videos match %q\n", termtext.Clip(text, 200))
				return nil
			}
			open, close := "[", "]" // the matches in bold on a terminal
			if a.stdoutTTY && os.Getenv("NO_COLOR") == "" {
				open, close = "\x1b[1m", "\x1b[0m"
			}
			for i, h := range hits {
				fmt.Fprintf(a.stdout, "%2d. %s — %s  https://youtu.be/%s\n", i+1, termtext.Safe(h.Title), termtext.Safe(h.ChannelTitle), termtext.Safe(h.VideoID))
				if strings.TrimSpace(h.Snippet) != "" {
					fmt.Fprintf(a.stdout, "    %s\n", termtext.Mark(h.Snippet, h.Highlights, open, close))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&region, "region", "", "only videos seen in this region's charts")
	cmd.Flags().IntVarP(&limit, "limit", "n", store.DefaultSearchLimit, fmt.Sprintf("most results to show (1-%d)", store.MaxSearchLimit))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print results as JSON")
	return cmd
}
