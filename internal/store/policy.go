package store

import (
	"context"
	"fmt"
	"time"
)

// Policy is a storage policy (config store.policy, docs/design.md §10): its
// names, cut-offs, the rule for older databases and how it is applied.
type Policy string

// The storage policies (docs/design.md §10, API policy III.E.4).
const (
	PolicyYouTube Policy = "youtube" // statistics and text deleted after 30 days; the default for new databases
	PolicyAmended Policy = "amended" // statistics kept 36 months; runs refresh or remove text older than 30 days
	PolicyKeep    Policy = "keep"    // nothing deleted; each run logs that this is only for data one may keep
)

// Cut-offs of the policies, in calendar days and months.
const (
	textDays           = 30 // text under every policy that deletes, statistics under youtube
	amendedStatsMonths = 36 // statistics under amended
)

// ParsePolicy returns the policy named s ("" is unset: InForce decides),
// or an error listing the names.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "", PolicyYouTube, PolicyAmended, PolicyKeep:
		return p, nil
	}
	return "", fmt.Errorf("must be youtube, amended or keep (docs/design.md §10)")
}

// Cutoffs returns what p deletes at now: statistics (captures with their
// entries, stats samples) older than stats, and the text of videos neither
// captured nor refreshed since text; a zero time deletes nothing.
func (p Policy) Cutoffs(now time.Time) (stats, text time.Time) {
	switch p {
	case PolicyYouTube:
		d := now.AddDate(0, 0, -textDays)
		return d, d
	case PolicyAmended:
		return now.AddDate(0, -amendedStatsMonths, 0), now.AddDate(0, 0, -textDays)
	}
	return time.Time{}, time.Time{}
}

// RunsRefreshText reports that each run handles text older than p's text cut-off itself, at its end
// (refreshed within the cap, else removed), so the policy applied before a run leaves text to it.
func (p Policy) RunsRefreshText() bool { return p == PolicyAmended }

// RefreshCalls is how many videos.list.refresh calls a credential's runs
// may send in 24 hours under p: refreshPerDay under amended, else 0.
func (p Policy) RefreshCalls(refreshPerDay int) int {
	if !p.RunsRefreshText() || refreshPerDay < 0 {
		return 0
	}
	return refreshPerDay
}

// InForce returns the policy that applies to st: configured when set, else youtube, or keep (legacy
// true) for a database that held data before store.policy existed (docs/design.md §10).
func InForce(ctx context.Context, configured Policy, st Retention) (p Policy, legacy bool, err error) {
	if configured != "" {
		return configured, false, nil
	}
	if legacy, err = st.LegacyData(ctx); err != nil {
		return "", false, err
	}
	if legacy {
		return PolicyKeep, true, nil
	}
	return PolicyYouTube, false, nil
}

// UnsetNote is what runs log, and `runs` and `quota status` print, when UnsetNoteDue.
const UnsetNote = "store.policy is not set and this database holds data older than 30 days: kept. " +
	"YouTube's API policies (III.E.4) allow 30 days; set store.policy to youtube (delete after 30 days), " +
	"amended (audited clients: statistics 36 months) or keep; see `trendfetch prune --policy youtube --dry-run`"

// UnsetNoteDue reports whether UnsetNote applies to st at now (reads only).
func UnsetNoteDue(ctx context.Context, configured Policy, st Retention, now time.Time) (bool, error) {
	if _, legacy, err := InForce(ctx, configured, st); err != nil || !legacy {
		return false, err
	}
	stats, _ := PolicyYouTube.Cutoffs(now)
	return st.PruneDue(ctx, stats)
}

// Apply deletes from st what p no longer allows at now (ApplyCutoffs); with dryRun it only counts.
func (p Policy) Apply(ctx context.Context, st Retention, now time.Time, dryRun bool) (PruneReport, error) {
	stats, text := p.Cutoffs(now)
	return st.ApplyCutoffs(ctx, stats, text, dryRun)
}

// ApplyBeforeRun is Apply as a run does it before fetching: text is left
// to the run's own text step when RunsRefreshText.
func (p Policy) ApplyBeforeRun(ctx context.Context, st Retention, now time.Time) (PruneReport, error) {
	stats, text := p.Cutoffs(now)
	if p.RunsRefreshText() {
		text = time.Time{}
	}
	return st.ApplyCutoffs(ctx, stats, text, false)
}
