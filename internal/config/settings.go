package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Setting is a row of the settings table: a setting an environment
// variable or a root flag sets (docs/design.md §2, "Adding a setting").
type Setting struct {
	// Key is the YAML path it sets ("quota.sqlite.path"; a yaml:"-" field by its lower-cased Go
	// name, underscores ignored: "runs.checkin_url"); "" only for --config.
	Key       string
	Env, Flag string // "" = none; Flag without "--"
	Help      string
	Default   string // when constant; "" = zero, or derived in complete
	List      bool   // a comma-separated list (US,GB)
	File      bool   // a path: `crontab` writes it absolute
	Always    bool   // `crontab` writes it even when unset here (its default needs $HOME)
	Secret    string // the file setting a job reads this secret from; never written out
}

// settings is the table; for every row, flags win over the environment, which wins over the
// file, where a *_file key (Secret; store.url_file for database) is the file's value (README,
// "Configuration"; readSecrets).
var settings = []Setting{
	{Env: "TRENDFETCH_CONFIG", Flag: "config", File: true,
		Help: "config file (default $XDG_CONFIG_HOME/trendfetch/config.yaml)"},
	{Key: "database", Env: "TRENDFETCH_DATABASE", Flag: "database", File: true, Always: true,
		Help: "SQLite database file (default $XDG_DATA_HOME/trendfetch/trendfetch.db), or a PostgreSQL URL postgres://...; one with a password: store.url_file"},
	{Key: "credential", Env: "TRENDFETCH_CREDENTIAL", Flag: "credential", Default: DefaultCredential,
		Help: "credential (Cloud project) to spend from"},
	{Key: "regions", Env: "TRENDFETCH_REGIONS", Default: "US", List: true,
		Help: "regions `run --all` ingests, comma-separated"},
	{Key: "api.endpoint", Env: "TRENDFETCH_API_ENDPOINT", Flag: "api-endpoint",
		Help: "YouTube Data API base URL, e.g. an emulator's http://127.0.0.1:8080/"},
	{Key: "quota.backend", Env: "TRENDFETCH_QUOTA_BACKEND", Flag: "quota-backend",
		Help: "quota backend: sqlite (embedded) or redis"},
	{Key: "quota.sqlite.path", Env: "TRENDFETCH_QUOTA_DB", File: true,
		Help: "the embedded quota backend's database (default quota.db beside the database)"},
	{Key: "quota.redis.url", Env: "TRENDFETCH_REDIS_URL", Secret: "quota.redis.url_file",
		Help: "Redis URL (redis://[user:password@]host:port/db); may hold a password"},
	{Key: "quota.redis.sentinel.password", Env: "TRENDFETCH_REDIS_SENTINEL_PASSWORD", Secret: "quota.redis.sentinel.password_file",
		Help: "the Redis Sentinels' own password"},
	{Key: "runs.checkin_url", Env: "TRENDFETCH_CHECKIN_URL", Secret: "runs.checkin_url_file",
		Help: "a monitor's ping URL (healthchecks.io protocol; {region} = the region); holds a ping key"},
	{Key: "log.level", Env: "TRENDFETCH_LOG_LEVEL", Flag: "log-level", Default: "info",
		Help: "trace, debug, info, warn or error"},
	{Key: "log.format", Env: "TRENDFETCH_LOG_FORMAT", Default: "auto",
		Help: "auto (console on a terminal, JSON otherwise), json or console"},
}

// Settings returns the table (a copy), in the order of --help.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// Lookup returns the row of the setting with YAML path key ("" for
// --config). It panics for a key the table lacks: a programming error.
func Lookup(key string) Setting {
	for _, s := range settings {
		if s.Key == key {
			return s
		}
	}
	panic("config: no setting " + key)
}

// Value returns s's value in c, a list joined with commas (not for --config).
func (s Setting) Value(c *Config) string {
	v := s.field(c)
	if s.List {
		return strings.Join(v.Interface().([]string), ",")
	}
	return v.String()
}

// set sets s in c to v, a list split at commas.
func (s Setting) set(c *Config, v string) {
	if s.List {
		s.field(c).Set(reflect.ValueOf(strings.Split(v, ",")))
		return
	}
	s.field(c).SetString(v)
}

func (s Setting) field(c *Config) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, name := range strings.Split(s.Key, ".") {
		t, found := v.Type(), false
		for i := 0; i < t.NumField() && !found; i++ {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if found = tag == name || tag == "-" && strings.ToLower(t.Field(i).Name) == strings.ReplaceAll(name, "_", ""); found {
				v = v.Field(i)
			}
		}
		if !found {
			panic(fmt.Sprintf("config: setting %q names no field", s.Key))
		}
	}
	return v
}

// apply sets over c what the environment (lookup) gives, then what the flags give (they win),
// and returns the keys they set.
func (c *Config) apply(lookup func(string) (string, bool), flags map[string]string) map[string]bool {
	given := map[string]bool{}
	for _, s := range settings {
		if v, ok := lookup(s.Env); s.Key != "" && s.Env != "" && ok && v != "" {
			s.set(c, v)
			given[s.Key] = true
		}
		if v := flags[s.Flag]; s.Key != "" && s.Flag != "" && v != "" {
			s.set(c, v)
			given[s.Key] = true
		}
	}
	return given
}
