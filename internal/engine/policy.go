package engine

import (
	"context"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
)

// applyRetention applies the storage policy in force and store.retention before a run, logging
// what they removed or why not (docs/design.md §10); a failure never fails the run.
func (e *Engine) applyRetention(ctx context.Context, st *store.Store) {
	now := time.Now()
	policy, legacy, err := store.InForce(ctx, e.cfg.Store.Policy, st)
	switch {
	case err != nil:
		e.log.Warn().Err(err).Msg("store.policy: cannot tell which policy applies; nothing deleted")
		return
	case legacy:
		if note := e.PolicyNote(ctx, st); note != "" {
			e.log.Warn().Msg(note)
		}
	case policy == store.PolicyKeep:
		e.log.Info().Msg("store.policy keep: nothing is deleted; only for data you may keep under YouTube's API policies (III.E.4)")
	default:
		rep, err := policy.ApplyBeforeRun(ctx, st, now)
		if err != nil {
			e.log.Warn().Err(err).Str("policy", string(policy)).Msg("store.policy: prune failed")
		} else if rep != (store.PruneReport{}) {
			e.log.Info().Str("policy", string(policy)).Int64("captures", rep.Captures).Int64("entries", rep.Entries).
				Int64("samples", rep.Samples).Int64("texts", rep.Texts).Int64("texts_cleared", rep.TextsCleared).
				Int64("videos", rep.Videos).Msg("store.policy: pruned")
		}
	}
	keep := e.cfg.Store.Retention.Std()
	if keep <= 0 {
		return
	}
	before := now.Add(-keep)
	due, err := st.PruneDue(ctx, before)
	if err != nil || !due {
		if err != nil {
			e.log.Warn().Err(err).Msg("store.retention: cannot check what to prune")
		}
		return
	}
	rep, err := st.Prune(ctx, before, false)
	if err != nil {
		e.log.Warn().Err(err).Msg("store.retention: prune failed")
		return
	}
	e.log.Info().Int64("captures", rep.Captures).Int64("entries", rep.Entries).Int64("samples", rep.Samples).
		Int64("videos", rep.Videos).Time("before", before).Msg("store.retention: pruned")
}

// PruneRequest is what `prune` asks: the storage policy at AsOf (zero: now), or with OlderThan >
// 0 an age instead. Policy overrides the policy in force (""); DryRun counts, deleting nothing.
type PruneRequest struct {
	AsOf      time.Time
	OlderThan time.Duration
	Policy    store.Policy
	DryRun    bool
}

// PruneResult is what Prune did: when ages were judged, the policy applied ("" with OlderThan)
// or OlderThan's cut-off Before, and what was (DryRun: would be) removed.
type PruneResult struct {
	AsOf   time.Time
	Policy store.Policy
	Before time.Time
	Report store.PruneReport
}

// Prune applies the policy in force (or q.Policy) at q.AsOf, or deletes what is older than
// q.OlderThan (read-only for a dry run).
func (e *Engine) Prune(ctx context.Context, q PruneRequest) (PruneResult, error) {
	res := PruneResult{AsOf: q.AsOf, Policy: q.Policy}
	if res.AsOf.IsZero() {
		res.AsOf = time.Now()
	}
	st, err := e.OpenStore(ctx, q.DryRun)
	if err != nil {
		return res, err
	}
	defer st.Close()
	if q.OlderThan > 0 {
		res.Before = res.AsOf.Add(-q.OlderThan)
		res.Report, err = st.Prune(ctx, res.Before, q.DryRun)
		return res, err
	}
	if res.Policy == "" {
		if res.Policy, _, err = store.InForce(ctx, e.cfg.Store.Policy, st); err != nil {
			return res, err
		}
	}
	res.Report, err = res.Policy.Apply(ctx, st, res.AsOf, q.DryRun)
	return res, err
}

// PolicyNote returns store.UnsetNote when it applies to st (store.UnsetNoteDue), else "".
func (e *Engine) PolicyNote(ctx context.Context, st *store.Store) string {
	if due, err := store.UnsetNoteDue(ctx, e.cfg.Store.Policy, st, time.Now()); err == nil && due {
		return store.UnsetNote
	}
	return ""
}
