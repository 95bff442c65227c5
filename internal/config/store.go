package config

import "time"

// Storage policies (store.policy): what trendfetch keeps of the data it
// fetches with an API key, which YouTube's API Services Developer Policies
// (section III.E.4) call Non-Authorized Data. See README "Data and
// YouTube's policies"; the README states the rules, it is not legal advice.
const (
	// PolicyYouTube deletes captures, statistics samples and text older than
	// 30 days at each run (III.E.4: statistics at most 30 days; other data
	// deleted or refreshed after 30 calendar days). The default for new
	// databases.
	PolicyYouTube = "youtube"
	// PolicyAmended keeps statistics up to 36 months (the 2026 "derived
	// metrics and data storage" amendment, audited clients only) and
	// removes the text of videos not captured within 30 days, leaving
	// their ids.
	PolicyAmended = "amended"
	// PolicyKeep deletes nothing automatically; each run logs once that
	// this is only for data the operator may keep.
	PolicyKeep = "keep"
)

// StoreSettings configures the database's contents.
type StoreSettings struct {
	// Policy is PolicyYouTube, PolicyAmended or PolicyKeep; "" (unset) means
	// youtube for a database created by this version, and keep (with a
	// warning at each run) for one that held data before store.policy
	// existed: an existing database is never pruned by a new default.
	Policy string `yaml:"policy"`
	// Retention > 0 makes every `trendfetch run` (and `trendfetch prune`
	// without --older-than) also delete captures and stats samples older
	// than it, and the videos nothing references any more (default 0: only
	// the policy deletes).
	Retention Duration `yaml:"retention"`
	// RefreshPerDay caps the videos.list.refresh calls (50 ids, 1 unit
	// each) that runs send per credential in 24 hours to refresh text older
	// than 30 days under PolicyAmended (default DefaultRefreshPerDay; 0:
	// never refresh, the text is removed leaving the id).
	RefreshPerDay int `yaml:"refresh_per_day"`
}

// DefaultRefreshPerDay is store.refresh_per_day's default: 20 calls, up to
// 1,000 texts and 20 units a day.
const DefaultRefreshPerDay = 20

func (s StoreSettings) validate() error {
	switch s.Policy {
	case "", PolicyYouTube, PolicyAmended, PolicyKeep:
	default:
		return invalid("store.policy", s.Policy, "must be youtube, amended or keep (see README \"Data and YouTube's policies\")")
	}
	if s.RefreshPerDay < 0 {
		return invalid("store.refresh_per_day", s.RefreshPerDay, "must be 0 (never refresh) or a positive count of calls, e.g. 20")
	}
	if s.Retention < 0 {
		return invalid("store.retention", s.Retention.Std(), "must be 0 (keep everything) or positive, e.g. 2160h")
	}
	return nil
}

// PolicyCutoffs returns what policy deletes at now (store.ApplyPolicy):
// statistics (captures with their entries, stats samples) older than
// stats, and the text of videos not captured since text; a zero time
// deletes nothing. youtube: both 30 calendar days; amended: statistics 36
// calendar months, text 30 days; keep (or anything else): nothing.
func PolicyCutoffs(policy string, now time.Time) (stats, text time.Time) {
	switch policy {
	case PolicyYouTube:
		d := now.AddDate(0, 0, -30)
		return d, d
	case PolicyAmended:
		return now.AddDate(0, -36, 0), now.AddDate(0, 0, -30)
	}
	return time.Time{}, time.Time{}
}
