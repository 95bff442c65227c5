package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/store"
)

func newPruneCmd(a *app) *cobra.Command {
	var (
		olderThan              string
		dryRun, asJSON, vacuum bool
	)
	cmd := &cobra.Command{
		Use:   "prune [--older-than DURATION] [--dry-run]",
		Short: "Delete captures and stats samples older than a duration, and videos nothing references any more",
		Long: `Delete chart, category and search captures (with their entries) and stats
samples older than --older-than (default: the config's store.retention), then
every video no capture or sample references any more, with its full-text index
rows. Runs, channels and categories are kept. Reports what it removed; with
--dry-run only what it would remove. DURATION is a Go duration (2160h) or days
(90d). With store.retention set, every trendfetch run prunes the same way.

SQLite keeps the pages it frees for reuse, so the file does not shrink:
--vacuum then rebuilds it and gives the space back (it needs free disk space
about the size of the database, and runs wait for it).`,
		Example: "  trendfetch prune --older-than 90d --dry-run\n  trendfetch prune --older-than 2160h --json\n  trendfetch prune --older-than 90d --vacuum",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var age time.Duration
			if olderThan != "" {
				var err error
				if age, err = parseAge(olderThan); err != nil {
					return usagef("trendfetch prune --older-than 90d", "--older-than %q: %v", olderThan, err)
				}
			}
			if err := a.loadConfig(); err != nil {
				return err
			}
			if olderThan == "" {
				if age = a.cfg.Store.Retention.Std(); age <= 0 {
					return usagef("trendfetch prune --older-than 90d", "prune needs --older-than (store.retention is not set)")
				}
			}
			var (
				st  *store.Store
				err error
			)
			if dryRun {
				st, err = store.OpenReadOnly(cmd.Context(), a.cfg.Database)
			} else {
				st, err = store.Open(cmd.Context(), a.cfg.Database)
			}
			if err != nil {
				return err
			}
			defer st.Close()
			before := time.Now().Add(-age)
			rep, err := st.Prune(cmd.Context(), before, dryRun)
			if err != nil {
				return err
			}
			var sizes *[2]int64 // file bytes before and after --vacuum
			if vacuum && !dryRun {
				b, af, err := st.Vacuum(cmd.Context())
				if err != nil {
					return err
				}
				sizes = &[2]int64{b, af}
			}
			if asJSON {
				var vb, va *int64
				if sizes != nil {
					vb, va = &sizes[0], &sizes[1]
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Before time.Time `json:"before"`
					DryRun bool      `json:"dry_run"`
					store.PruneReport
					BytesBefore *int64 `json:"file_bytes_before_vacuum"`
					BytesAfter  *int64 `json:"file_bytes_after_vacuum"`
				}{before.UTC(), dryRun, rep, vb, va})
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(a.stdout, "%s %d captures (%d entries), %d stats samples, %d text versions, %d videos older than %s UTC\n",
				verb, rep.Captures, rep.Entries, rep.Samples, rep.Texts, rep.Videos, before.UTC().Format("2006-01-02 15:04"))
			if sizes != nil {
				fmt.Fprintf(a.stdout, "vacuum: database file %d -> %d bytes\n", sizes[0], sizes[1])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age of what to delete: a Go duration (2160h) or days (90d); default store.retention")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be removed, remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&vacuum, "vacuum", false, "then rebuild the database file to give the freed space back to the disk")
	return cmd
}

// parseAge reads a positive duration: Go syntax or whole days ("90d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("want a positive number of days, e.g. 90d")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("want a positive duration such as 2160h or 90d")
	}
	return v, nil
}

// applyRetention prunes by store.retention before a run (see Prune); a
// failure is logged, never fails the run.
func (a *app) applyRetention(ctx context.Context, st *store.Store) {
	keep := a.cfg.Store.Retention.Std()
	if keep <= 0 {
		return
	}
	before := time.Now().Add(-keep)
	due, err := st.PruneDue(ctx, before)
	if err != nil || !due {
		if err != nil {
			a.log.Warn().Err(err).Msg("store.retention: cannot check what to prune")
		}
		return
	}
	rep, err := st.Prune(ctx, before, false)
	if err != nil {
		a.log.Warn().Err(err).Msg("store.retention: prune failed")
		return
	}
	a.log.Info().Int64("captures", rep.Captures).Int64("entries", rep.Entries).Int64("samples", rep.Samples).
		Int64("videos", rep.Videos).Time("before", before).Msg("store.retention: pruned")
}
