package config

import "github.com/trendfetch/trendfetch/internal/store"

// StoreSettings is the `store` section (docs/design.md §10): the storage policy ("" = store.InForce
// decides), Retention (> 0: runs and prune delete older captures, samples and unreferenced videos),
// RefreshPerDay (videos.list.refresh calls per credential a day under the amended policy; 0 = never),
// URLFile (a file holding a postgres:// URL: the file's database, which --database and
// TRENDFETCH_DATABASE win over).
type StoreSettings struct {
	Policy        store.Policy `yaml:"policy"`
	Retention     Duration     `yaml:"retention"`
	RefreshPerDay int          `yaml:"refresh_per_day"`
	URLFile       string       `yaml:"url_file"`
}

// validate checks the store section.
func (s StoreSettings) validate() error {
	if s.Retention < 0 {
		return invalid("store.retention", s.Retention.Std(), "must be 0 (keep everything) or positive, e.g. 2160h")
	}
	if _, err := store.ParsePolicy(string(s.Policy)); err != nil {
		return invalid("store.policy", s.Policy, "%v", err)
	}
	if s.RefreshPerDay < 0 {
		return invalid("store.refresh_per_day", s.RefreshPerDay, "must be 0 (never refresh) or a positive count of calls, e.g. 20")
	}
	return nil
}
