package config

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Credential is one Google Cloud project: Name is the quota scope; the key is read by APIKey.
type Credential struct {
	Name          string `yaml:"name"`
	KeyEnv        string `yaml:"api_key_env"`
	KeyFile       string `yaml:"api_key_file"`
	KeyCredential string `yaml:"api_key_credential"`
}

// Systemd credentials (LoadCredential=NAME:PATH) read when the environment
// and files give nothing (a key's: KeyCredentialPrefix + its name).
const (
	KeyCredentialPrefix  = "youtube-api-key-"
	CheckinURLCredential = "checkin-url"
)

// readSecrets fills each secret, and the database, from its *_file setting, else its systemd
// credential: the file's value, which the environment and flags (given: the keys they set) win
// over, the file setting then cleared. A file's database beside store.url_file is refused naming
// both; errors never hold the content.
func (c *Config) readSecrets(lookup func(string) (string, bool), given map[string]bool) error {
	r := &c.Quota.Redis
	for _, s := range []struct {
		key        string
		dst, file  *string
		credential string
		setting    string
	}{
		{"quota.redis.url", &r.URL, &r.URLFile, "redis-url", "quota.redis.url_file"},
		{"quota.redis.sentinel.password", &r.Sentinel.Password, &r.Sentinel.PasswordFile, "redis-sentinel-password", "quota.redis.sentinel.password_file"},
		{"runs.checkin_url", &c.Runs.CheckinURL, &c.Runs.CheckinURLFile, CheckinURLCredential, "runs.checkin_url_file"},
		{"database", &c.Database, &c.Store.URLFile, "", "store.url_file"},
	} {
		file, setting := *s.file, s.setting
		switch {
		case given[s.key]:
			*s.file = ""
			continue
		case *s.dst != "" && file != "":
			return invalid(s.setting, file, "the config also sets %s: keep one of the two", s.key)
		case *s.dst != "":
			continue
		case file == "":
			var ok bool
			if file, ok = secret.SystemdCredential(lookup, s.credential); !ok {
				continue
			}
			setting = "systemd credential " + s.credential
		}
		v, err := secret.ReadFile(file)
		if err != nil {
			return invalid(setting, file, "%s", err.Error())
		}
		if s.key == "database" && store.EngineOf(v) != store.PostgreSQL {
			return invalid(setting, file, "holds no postgres:// or postgresql:// URL")
		}
		*s.dst = v
	}
	return nil
}

// FindCredential returns the credential named name.
func (c *Config) FindCredential(name string) (Credential, error) {
	if i := slices.IndexFunc(c.Credentials, func(cr Credential) bool { return cr.Name == name }); i >= 0 {
		return c.Credentials[i], nil
	}
	return Credential{}, invalid("credential", name, "no credential of that name")
}

// ErrNoAPIKey is APIKey's error when no source gives a key.
var ErrNoAPIKey = exitcode.New(exitcode.Usage, "no API key")

// APIKey returns the credential's key from KeyEnv, else KeyFile, else the
// systemd credential KeyCredential (default KeyCredentialPrefix + Name).
// Errors name the source (ErrNoAPIKey: none), never the key.
func (cr Credential) APIKey(lookup func(string) (string, bool)) (string, error) {
	if v, _ := lookup(cr.KeyEnv); cr.KeyEnv != "" && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), nil
	}
	name := cmp.Or(cr.KeyCredential, KeyCredentialPrefix+cr.Name)
	credPath, _ := secret.SystemdCredential(lookup, name)
	for _, f := range []struct{ path, setting string }{{cr.KeyFile, "api_key_file"}, {credPath, "api_key_credential"}} {
		if f.path == "" {
			continue
		}
		k, err := secret.ReadFile(f.path)
		if err != nil {
			return "", invalid(fmt.Sprintf("credentials[%s].%s", cr.Name, f.setting), f.path, "%s", err.Error())
		}
		if k != "" {
			return k, nil
		}
	}
	file := fmt.Sprintf("credentials[%s].api_key_file (a file holding the key, chmod 600: the way for cron)", cr.Name)
	if cr.KeyFile != "" {
		file = "the first line of " + cr.KeyFile
	}
	return "", fmt.Errorf("credential %q: %w: set $%s, %s, or the systemd credential %s", cr.Name, ErrNoAPIKey, cr.KeyEnv, file, name)
}

// SecretFiles returns the files of c that hold secrets (the *_file settings).
func (c *Config) SecretFiles() []string {
	var out []string
	for _, cr := range c.Credentials {
		out = append(out, cr.KeyFile)
	}
	out = append(out, c.Quota.Redis.URLFile, c.Quota.Redis.Sentinel.PasswordFile, c.Runs.CheckinURLFile, c.Store.URLFile)
	return slices.DeleteFunc(out, func(f string) bool { return f == "" })
}

// Names returns the names the configuration shows that a secret may equal (the program's name,
// credentials, regions, the database's and Redis's user, host, database and path segments): a
// secret equal to one is masked only where it stands as a secret (secret.Set.Public).
func (c *Config) Names() []string {
	out := []string{"trendfetch", c.Quota.Redis.Sentinel.Master, c.Quota.Redis.Sentinel.Username}
	for _, cr := range c.Credentials {
		out = append(out, cr.Name, cr.KeyEnv)
	}
	out = append(out, c.Regions...)
	for _, raw := range []string{c.Database, c.Quota.Redis.URL} {
		if u, err := url.Parse(raw); err == nil {
			out = append(out, u.User.Username(), u.Hostname())
			out = append(out, strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })...)
		}
	}
	return out
}
