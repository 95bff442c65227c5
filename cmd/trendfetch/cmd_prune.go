package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/store"
)

func newPruneCmd(a *app) *cobra.Command {
	var (
		olderThan      string
		dryRun, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "prune [--older-than DURATION] [--dry-run]",
		Short: "Delete captures and stats samples older than a duration, and videos nothing references any more",
		Long: `Delete chart, category and search captures (with their entries) and stats
samples older than --older-than (default: the config's store.retention), then
every video no capture or sample references any more, with its full-text index
rows. Runs, channels and categories are kept. Reports what it removed; with
--dry-run only what it would remove. DURATION is a Go duration (2160h) or days
(90d). With store.retention set, every trendfetch run prunes the same way.`,
		Example: "  trendfetch prune --older-than 90d --dry-run\n  trendfetch prune --older-than 2160h --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var age time.Duration
			if olderThan != "" {
				var err error
				if age, err = config.ParseAge(olderThan); err != nil {
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
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Before time.Time `json:"before"`
					DryRun bool      `json:"dry_run"`
					store.PruneReport
				}{before.UTC(), dryRun, rep})
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(a.stdout, "%s %d captures (%d entries), %d stats samples, %d videos older than %s UTC\n",
				verb, rep.Captures, rep.Entries, rep.Samples, rep.Videos, before.UTC().Format("2006-01-02 15:04"))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age of what to delete: a Go duration (2160h) or days (90d); default store.retention")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be removed, remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
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
