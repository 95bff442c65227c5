package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// videoOptions is what `video` was asked (its id and flags) and where it writes.
type videoOptions struct {
	io     ioStreams
	engine *engine.Engine
	id     string // parsed from the id or link typed
	asJSON bool
}

func newVideoCmd(a *app) *cobra.Command {
	o := &videoOptions{}
	cmd := &cobra.Command{
		Use:   "video ID|URL",
		Short: "Show a stored video and its history: every capture it was in, every statistics point",
		Long: `Show a video's stored text and its history, oldest first: every capture it was
in (region, time, rank, the statistics of that moment) and every statistics
sample taken after it left the chart (videos.batchGetStats); its title changes
with the time each was first captured; then per region its first and last time
on the chart, best rank and days on the chart. Reads the local database only;
costs no quota. Times are UTC. The video is its 11-character id (ids that start
with - work as typed) or a pasted link: youtube.com/watch?v=ID (www., m.,
music.; &t= and other parameters ignored), youtu.be/ID, youtube.com/shorts/ID,
/live/ID, /embed/ID.`,
		Example: "  trendfetch video dQw4w9WgXcQ\n  trendfetch video -2RVw2_QyxQ --json\n  trendfetch video 'https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s'",
		// Flags are parsed in RunE (videoArgs): an id may start with '-'
		// (about one in 64), which cobra would take for flags.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, raw []string) error {
			args, help, err := videoArgs(cmd, raw)
			if err != nil || help {
				return err
			}
			if len(args) != 1 {
				return usagef("trendfetch video dQw4w9WgXcQ", "video takes one video id or URL (got %d arguments)", len(args))
			}
			if o.id, err = store.ParseVideoID(args[0]); err != nil {
				return usagef("trendfetch video dQw4w9WgXcQ", "%v", err)
			}
			if err := a.loadConfig(); err != nil { // flags parsed above, not before PreRunE
				return err
			}
			o.io, o.engine = a.ioStreams, a.engine()
			return videoRun(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the video and its history as JSON (null = unknown)")
	return cmd
}

// videoRun prints the stored history of the video o names.
func videoRun(ctx context.Context, o *videoOptions) error {
	_, st, err := openRegionStore(ctx, o.engine, "")
	if err != nil {
		return err
	}
	defer st.Close()
	h, err := st.History(ctx, o.id)
	if err != nil {
		return err
	}
	if o.asJSON {
		return o.io.printJSON(h)
	}
	// One buffered write: the scrubbing stdout costs per Write call.
	bw := bufio.NewWriterSize(o.io.stdout, 64<<10)
	printHistory(bw, h, o.io.stdoutTTY)
	return bw.Flush()
}

// videoArgs parses the flags of `video` from raw and returns the
// positional arguments: a video id starting with '-' (not "--" + a flag's
// name) is one, wherever it stands. help reports --help (usage printed).
func videoArgs(cmd *cobra.Command, raw []string) (args []string, help bool, err error) {
	cmd.InheritedFlags() // merges the global flags into cmd.Flags()
	fs := cmd.Flags()
	var flags, ids []string
	for i, a := range raw {
		if a == "--" {
			ids = append(ids, raw[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && store.IsVideoID(a) && !(strings.HasPrefix(a, "--") && fs.Lookup(a[2:]) != nil) {
			ids = append(ids, a)
			continue
		}
		flags = append(flags, a)
	}
	if err := fs.Parse(flags); err != nil {
		return nil, false, cmd.FlagErrorFunc()(cmd, err)
	}
	if help, _ := fs.GetBool("help"); help {
		return nil, true, cmd.Help()
	}
	return append(fs.Args(), ids...), false, nil
}

// printHistory writes the human form of `video` to w (a bufio.Writer:
// its Flush reports a failed write); spark adds a views sparkline.
func printHistory(w io.Writer, h store.VideoHistory, spark bool) {
	v := h.Video
	fmt.Fprintf(w, "%s\n%s · https://youtu.be/%s", termtext.Safe(v.Title), termtext.Safe(v.ChannelTitle), termtext.Safe(v.ID))
	if !v.PublishedAt.IsZero() {
		fmt.Fprintf(w, " · published %s UTC", v.PublishedAt.UTC().Format(utcMinute))
	}
	fmt.Fprintln(w)
	printTitlesAndRegions(w, h)
	if spark {
		if line := sparkline(h.Points); line != "" {
			fmt.Fprintf(w, "\nviews %s\n", line)
		}
	}
	fmt.Fprintln(w)
	tw := table(w, "TIME (UTC)\tSOURCE\tREGION\tRANK\tVIEWS\tLIKES\tCOMMENTS")
	for _, r := range historyRows(h) {
		fmt.Fprint(tw, r.line)
	}
	tw.Flush()
	for _, c := range h.Changes {
		fmt.Fprintf(w, "* %s: YouTube changed %s (%s); not comparable as-is across it. Source: %s\n", c.Date, c.Affects, c.Summary, c.Source)
	}
}

// printTitlesAndRegions writes h's title changes, as captured (when the
// title changed), and its time on each region's chart.
func printTitlesAndRegions(w io.Writer, h store.VideoHistory) {
	if len(h.Titles) > 1 {
		fmt.Fprintln(w)
		tw := table(w, "TITLE SINCE (UTC)\tTITLE")
		for _, c := range h.Titles {
			fmt.Fprintf(tw, "%s\t%s\n", c.At.Format(utcMinute), c.Title)
		}
		tw.Flush()
	}
	if len(h.Regions) > 0 {
		fmt.Fprintln(w)
		tw := table(w, "REGION\tFIRST ON CHART (UTC)\tLAST ON CHART (UTC)\tBEST RANK\tLAST RANK\tDAYS")
		for _, r := range h.Regions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", r.Region, r.FirstAt.Format(utcMinute), r.LastAt.Format(utcMinute),
				r.BestRank, r.LastRank, r.Days)
		}
		tw.Flush()
	}
}

// historyRow is one line of the history table at its time; change: a YouTube change.
type historyRow struct {
	at     time.Time
	line   string
	change bool
}

// historyRows are YouTube's changes, h's appearances and stats samples merged
// by time (at one time in this order); changes after the last sample are left out.
func historyRows(h store.VideoHistory) []historyRow {
	var rows []historyRow
	for _, c := range h.Changes {
		rows = append(rows, historyRow{c.At(), fmt.Sprintf("%s 00:00\t── YouTube change *\t\t\t\t\t\n", c.Date), true})
	}
	for _, a := range h.Appearances {
		src := a.Kind
		if a.Query != "" {
			src += " " + a.Query
		}
		if !a.Complete {
			src += " (partial)"
		}
		rows = append(rows, historyRow{a.CapturedAt, fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\n", a.CapturedAt.Format(utcMinute), termtext.Safe(src), a.Region, a.Rank,
			humanInt(a.Views), humanInt(a.Likes), humanInt(a.Comments)), false})
	}
	for _, p := range h.Points {
		if p.Source == store.SourceStats {
			rows = append(rows, historyRow{p.At, fmt.Sprintf("%s\t%s\t-\t-\t%s\t%s\t%s\n", p.At.Format(utcMinute), p.Source,
				humanInt(p.Views), humanInt(p.Likes), humanInt(p.Comments)), false})
		}
	}
	slices.SortStableFunc(rows, func(x, y historyRow) int { return x.at.Compare(y.at) })
	for len(rows) > 0 && rows[len(rows)-1].change {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// sparkline renders known view counts, oldest first, in at most 60 block
// characters with the first and the last; "" with fewer than two.
func sparkline(points []store.StatsPoint) string {
	var vals []int64
	for _, p := range points {
		if p.Views != nil {
			vals = append(vals, *p.Views)
		}
	}
	if len(vals) < 2 {
		return ""
	}
	return fmt.Sprintf("%s  %s → %s", termtext.Sparkline(vals, 60), humanInt(&vals[0]), humanInt(&vals[len(vals)-1]))
}
