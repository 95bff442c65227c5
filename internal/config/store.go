package config

import "github.com/trendfetch/trendfetch/internal/store"

// StoreSettings configures the database's contents.
type StoreSettings struct {
	// Policy is the storage policy; "" lets store.InForce decide per
	// database (docs/design.md §10).
	Policy store.Policy `yaml:"policy"`
	// Retention > 0: runs and prune also delete captures, samples and
	// unreferenced videos older than it (0: only the policy deletes).
	Retention Duration `yaml:"retention"`
	// RefreshPerDay caps the videos.list.refresh calls (50 ids, 1 unit
	// each) per credential in 24 hours that refresh old text under the
	// amended policy (default 20; 0: never, the text is removed).
	RefreshPerDay int `yaml:"refresh_per_day"`
	// URLFile names a file holding the PostgreSQL URL (postgres://...),
	// for a URL with a password: when set, the URL replaces database.
	URLFile string `yaml:"url_file"`
}

func (s StoreSettings) validate() error {
	if _, err := store.ParsePolicy(string(s.Policy)); err != nil {
		return invalid("store.policy", s.Policy, "%v", err)
	}
	if s.RefreshPerDay < 0 {
		return invalid("store.refresh_per_day", s.RefreshPerDay, "must be 0 (never refresh) or a positive count of calls, e.g. 20")
	}
	return nil
}
