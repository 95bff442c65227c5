package config

import "github.com/trendfetch/trendfetch/internal/store"

// StoreSettings configures the database's contents.
type StoreSettings struct {
	// Policy is the storage policy (store.Policy: youtube, amended or
	// keep); "" (unset) lets store.InForce decide per database: an existing
	// database is never pruned by a changed default.
	Policy store.Policy `yaml:"policy"`
	// Retention > 0 makes every `trendfetch run` (and `trendfetch prune`
	// without --older-than) also delete captures and stats samples older
	// than it, and the videos nothing references any more (default 0: only
	// the policy deletes).
	Retention Duration `yaml:"retention"`
	// RefreshPerDay caps the videos.list.refresh calls (50 ids, 1 unit
	// each) that runs send per credential in 24 hours to refresh old text
	// under the amended policy (default DefaultRefreshPerDay; 0: never
	// refresh, the text is removed leaving the id).
	RefreshPerDay int `yaml:"refresh_per_day"`
	// URLFile names a file holding the PostgreSQL URL (postgres://...),
	// for a URL with a password: when set, the URL replaces database.
	URLFile string `yaml:"url_file"`
}

// DefaultRefreshPerDay is store.refresh_per_day's default: 20 calls, up to
// 1,000 texts and 20 units a day.
const DefaultRefreshPerDay = 20

func (s StoreSettings) validate() error {
	if _, err := store.ParsePolicy(string(s.Policy)); err != nil {
		return invalid("store.policy", s.Policy, "%v", err)
	}
	if s.RefreshPerDay < 0 {
		return invalid("store.refresh_per_day", s.RefreshPerDay, "must be 0 (never refresh) or a positive count of calls, e.g. 20")
	}
	if s.Retention < 0 {
		return invalid("store.retention", s.Retention.Std(), "must be 0 (keep everything) or positive, e.g. 2160h")
	}
	return nil
}
