package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/store"
)

func newPruneCmd(a *app) *cobra.Command {
	var (
		olderThan, asOf, policy string
		dryRun, asJSON, vacuum  bool
	)
	cmd := &cobra.Command{
		Use:   "prune [--older-than DURATION | --as-of TIME] [--dry-run]",
		Short: "Delete what the storage policy (or an age) no longer allows: old captures, stats samples, text",
		Long: `Without --older-than, apply the storage policy (store.policy, or --policy) as
every run does, judged at --as-of (default now), and report per class what it
removed: captures (with their entries), stats samples, videos whose text was
removed (id kept), old text versions, and videos nothing references any more.
  youtube  statistics and text older than 30 days
  amended  statistics older than 36 months, text older than 30 days
  keep     nothing
With store.policy unset, a database that held data before store.policy existed
keeps everything (runs warn); a new one follows youtube. --dry-run --as-of lets
you look before you choose, e.g. --policy youtube --as-of 2026-12-31 --dry-run.

With --older-than, delete chart, category and search captures (with their
entries) and stats samples older than it instead, then every video no capture
or sample references any more. DURATION is a Go duration (2160h) or days
(90d). Runs, channels and categories are kept.

SQLite keeps the pages it frees for reuse, so the file does not shrink:
--vacuum then rebuilds it and gives the space back (it needs free disk space
about the size of the database, and runs wait for it).`,
		Example: "  trendfetch prune --dry-run --as-of 2026-12-31 --json\n" +
			"  trendfetch prune --policy amended --dry-run\n" +
			"  trendfetch prune --older-than 90d --vacuum",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var age time.Duration
			if olderThan != "" {
				var err error
				if age, err = duration.ParseAge(olderThan); err != nil {
					return usagef("trendfetch prune --older-than 90d", "--older-than %q: %v", olderThan, err)
				}
				if asOf != "" || policy != "" {
					return usagef("trendfetch prune --older-than 90d", "--older-than cannot be combined with --as-of or --policy")
				}
			}
			now := time.Now()
			if asOf != "" {
				var err error
				if now, err = store.ParseAt(asOf); err != nil {
					return usagef("trendfetch prune --as-of 2026-12-31 --dry-run", "--as-of %q: %v", asOf, err)
				}
			}
			switch policy {
			case "", config.PolicyYouTube, config.PolicyAmended, config.PolicyKeep:
			default:
				return usagef("trendfetch prune --policy youtube --dry-run", "--policy %q: must be youtube, amended or keep", policy)
			}
			if err := a.loadConfig(); err != nil {
				return err
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
			var (
				rep     store.PruneReport
				before  *time.Time // --older-than's cut-off
				inForce string
			)
			if olderThan != "" {
				b := now.Add(-age)
				before = &b
				if rep, err = st.Prune(cmd.Context(), b, dryRun); err != nil {
					return err
				}
			} else {
				if inForce = policy; inForce == "" {
					if inForce, _, err = a.policyInForce(cmd.Context(), st); err != nil {
						return err
					}
				}
				stats, text := config.PolicyCutoffs(inForce, now)
				if rep, err = st.ApplyPolicy(cmd.Context(), stats, text, dryRun); err != nil {
					return err
				}
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
				var pol *string
				if inForce != "" {
					pol = &inForce
				}
				var cut *time.Time
				if before != nil {
					u := before.UTC()
					cut = &u
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Policy *string    `json:"policy"`
					AsOf   time.Time  `json:"as_of"`
					Before *time.Time `json:"before"`
					DryRun bool       `json:"dry_run"`
					store.PruneReport
					BytesBefore *int64 `json:"file_bytes_before_vacuum"`
					BytesAfter  *int64 `json:"file_bytes_after_vacuum"`
				}{pol, now.UTC(), cut, dryRun, rep, vb, va})
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			what := "policy " + inForce + " as of " + now.UTC().Format("2006-01-02 15:04") + " UTC"
			if before != nil {
				what = "older than " + before.UTC().Format("2006-01-02 15:04") + " UTC"
			}
			fmt.Fprintf(a.stdout, "%s %d captures (%d entries), %d stats samples, %d text versions, %d videos' text, %d videos (%s)\n",
				verb, rep.Captures, rep.Entries, rep.Samples, rep.Texts, rep.TextsCleared, rep.Videos, what)
			if sizes != nil {
				fmt.Fprintf(a.stdout, "vacuum: database file %d -> %d bytes\n", sizes[0], sizes[1])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&olderThan, "older-than", "", "delete captures and samples older than this instead of applying the policy: a Go duration (2160h) or days (90d)")
	f.StringVar(&asOf, "as-of", "", "judge ages at this time instead of now (RFC 3339 or UTC date), e.g. with --dry-run")
	f.StringVar(&policy, "policy", "", "apply this policy instead of store.policy: youtube, amended or keep")
	f.BoolVar(&dryRun, "dry-run", false, "report what would be removed, remove nothing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&vacuum, "vacuum", false, "then rebuild the database file to give the freed space back to the disk")
	return cmd
}

// policyInForce returns the storage policy runs apply to st: store.policy,
// or when unset youtube for a new database and keep for one that held data
// before store.policy existed (legacy true).
func (a *app) policyInForce(ctx context.Context, st *store.Store) (policy string, legacy bool, err error) {
	if a.cfg.Store.Policy != "" {
		return a.cfg.Store.Policy, false, nil
	}
	if legacy, err = st.LegacyData(ctx); err != nil {
		return "", false, err
	}
	if legacy {
		return config.PolicyKeep, true, nil
	}
	return config.PolicyYouTube, false, nil
}

// policyUnsetNote is what runs log and `runs` prints when store.policy is
// unset on a database holding data older than 30 days.
const policyUnsetNote = "store.policy is not set and this database holds data older than 30 days: kept. " +
	"YouTube's API policies (III.E.4) allow 30 days; set store.policy to youtube (delete after 30 days), " +
	"amended (audited clients: statistics 36 months) or keep; see `trendfetch prune --policy youtube --dry-run`"

// policyNotice prints policyUnsetNote to standard error when it applies to
// st (read-only: it checks, never deletes).
func (a *app) policyNotice(ctx context.Context, st *store.Store) {
	if _, legacy, err := a.policyInForce(ctx, st); err != nil || !legacy {
		return
	}
	if old, err := st.PruneDue(ctx, time.Now().AddDate(0, 0, -30)); err == nil && old {
		fmt.Fprintf(a.stderr, "note: %s\n", policyUnsetNote)
	}
}

// applyRetention applies the storage policy (see policyInForce and
// store.ApplyPolicy) and store.retention before a run, logging what they
// removed; with keep it logs once that nothing is deleted, and with an
// unset policy on an older database holding data older than 30 days it
// warns once what to choose. A failure is logged, never fails the run.
func (a *app) applyRetention(ctx context.Context, st *store.Store) {
	now := time.Now()
	policy, legacy, err := a.policyInForce(ctx, st)
	if err != nil {
		a.log.Warn().Err(err).Msg("store.policy: cannot tell which policy applies; nothing deleted")
		return
	}
	switch {
	case legacy:
		old, err := st.PruneDue(ctx, now.AddDate(0, 0, -30))
		if err == nil && old {
			a.log.Warn().Msg(policyUnsetNote)
		}
	case policy == config.PolicyKeep:
		a.log.Info().Msg("store.policy keep: nothing is deleted; only for data you may keep under YouTube's API policies (III.E.4)")
	default:
		stats, text := config.PolicyCutoffs(policy, now)
		if policy == config.PolicyAmended {
			text = time.Time{} // each run's text step refreshes it first (openEngine)
		}
		rep, err := st.ApplyPolicy(ctx, stats, text, false)
		if err != nil {
			a.log.Warn().Err(err).Str("policy", policy).Msg("store.policy: prune failed")
		} else if rep != (store.PruneReport{}) {
			a.log.Info().Str("policy", policy).Int64("captures", rep.Captures).Int64("entries", rep.Entries).
				Int64("samples", rep.Samples).Int64("texts", rep.Texts).Int64("texts_cleared", rep.TextsCleared).
				Int64("videos", rep.Videos).Msg("store.policy: pruned")
		}
	}
	keep := a.cfg.Store.Retention.Std()
	if keep <= 0 {
		return
	}
	before := now.Add(-keep)
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
