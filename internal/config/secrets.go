package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Credential is one Google Cloud project and where its API key comes from.
// The key itself is never stored in Config: APIKey reads it when needed.
type Credential struct {
	// Name is the quota scope (Redis keys, runs table, quota status); it is
	// never the key itself. 1-64 characters of [A-Za-z0-9._-].
	Name string `yaml:"name"`
	// KeyEnv is the environment variable holding the API key (default DefaultKeyEnv).
	KeyEnv string `yaml:"api_key_env"`
	// KeyFile is a file whose first line is the API key; used when KeyEnv is unset or empty.
	KeyFile string `yaml:"api_key_file"`
	// KeyCredential is the systemd credential holding the key
	// (LoadCredential=NAME:PATH in the unit), read from
	// $CREDENTIALS_DIRECTORY/NAME when neither KeyEnv nor KeyFile gives one
	// (default youtube-api-key-<name>, e.g. youtube-api-key-default).
	KeyCredential string `yaml:"api_key_credential"`
}

// Systemd credentials (LoadCredential=NAME:PATH) read from
// $CREDENTIALS_DIRECTORY when the environment and the files give nothing.
const (
	// KeyCredentialPrefix + a credential's name is its key's default.
	KeyCredentialPrefix = "youtube-api-key-"
	// RedisURLCredential holds the Redis URL (like TRENDFETCH_REDIS_URL).
	RedisURLCredential = "redis-url"
	// SentinelPasswordCredential holds the Sentinels' password.
	SentinelPasswordCredential = "redis-sentinel-password"
)

// systemdCredential returns the path of the systemd credential name when
// the service has a $CREDENTIALS_DIRECTORY holding it.
func systemdCredential(lookup func(string) (string, bool), name string) (string, bool) {
	dir, ok := lookup("CREDENTIALS_DIRECTORY")
	if !ok || dir == "" || name == "" || strings.ContainsAny(name, "/\x00") {
		return "", false
	}
	path := filepath.Join(dir, name)
	_, err := os.Stat(path)
	return path, err == nil
}

// readSecrets fills the Redis URL and the Sentinels' password that no
// environment variable gave from their files: quota.redis.url_file, else
// the systemd credential redis-url; sentinel.password_file, else the
// systemd credential redis-sentinel-password. Errors name the setting.
func (c *Config) readSecrets(lookup func(string) (string, bool)) error {
	if c.Quota.Redis.URL == "" && c.Quota.Redis.URLFile != "" {
		u, err := readSecretFile(c.Quota.Redis.URLFile)
		if err != nil {
			return invalid("quota.redis.url_file", c.Quota.Redis.URLFile, "%s", err.Error())
		}
		c.Quota.Redis.URL = u
	}
	if path, ok := systemdCredential(lookup, RedisURLCredential); ok && c.Quota.Redis.URL == "" {
		u, err := readSecretFile(path)
		if err != nil {
			return invalid("systemd credential "+RedisURLCredential, path, "%s", err.Error())
		}
		c.Quota.Redis.URL = u
	}
	if path, ok := systemdCredential(lookup, SentinelPasswordCredential); ok && c.Quota.Redis.Sentinel.Password == "" && c.Quota.Redis.Sentinel.PasswordFile == "" {
		pw, err := readSecretFile(path)
		if err != nil {
			return invalid("systemd credential "+SentinelPasswordCredential, path, "%s", err.Error())
		}
		c.Quota.Redis.Sentinel.Password = pw
	}
	if s := &c.Quota.Redis.Sentinel; s.Password == "" && s.PasswordFile != "" {
		pw, err := readSecretFile(s.PasswordFile)
		if err != nil {
			return invalid("quota.redis.sentinel.password_file", s.PasswordFile, "%s", err.Error())
		}
		s.Password = pw
	}
	return nil
}

// FindCredential returns the credential named name.
func (c *Config) FindCredential(name string) (Credential, error) {
	for _, cr := range c.Credentials {
		if cr.Name == name {
			return cr, nil
		}
	}
	return Credential{}, invalid("credential", name, "no credential of that name")
}

// ErrNoAPIKey is returned by APIKey when neither the env variable nor the key
// file gives a key.
var ErrNoAPIKey = errors.New("no API key")

// APIKey returns the credential's API key from its env variable, else its
// key file. Errors name the variable or file, never a key's content.
func (cr Credential) APIKey(lookup func(string) (string, bool)) (string, error) {
	if cr.KeyEnv != "" {
		if v, ok := lookup(cr.KeyEnv); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	if cr.KeyFile != "" {
		k, err := readSecretFile(cr.KeyFile)
		if err != nil {
			return "", invalid(fmt.Sprintf("credentials[%s].api_key_file", cr.Name), cr.KeyFile, "%s", err.Error())
		}
		if k != "" {
			return k, nil
		}
	}
	name := cmp.Or(cr.KeyCredential, KeyCredentialPrefix+cr.Name)
	if path, ok := systemdCredential(lookup, name); ok {
		k, err := readSecretFile(path)
		if err != nil {
			return "", invalid(fmt.Sprintf("credentials[%s].api_key_credential", cr.Name), path, "%s", err.Error())
		}
		if k != "" {
			return k, nil
		}
	}
	where := "$" + cr.KeyEnv
	if cr.KeyFile != "" {
		where += " or " + cr.KeyFile
	}
	where += " or the systemd credential " + name
	return "", fmt.Errorf("credential %q: %w: set %s", cr.Name, ErrNoAPIKey, where)
}

// SecretFiles returns the files of c that hold secrets: every credential's
// api_key_file, quota.redis.url_file and quota.redis.sentinel.password_file.
func (c *Config) SecretFiles() []string {
	var out []string
	for _, cr := range c.Credentials {
		if cr.KeyFile != "" {
			out = append(out, cr.KeyFile)
		}
	}
	if c.Quota.Redis.URLFile != "" {
		out = append(out, c.Quota.Redis.URLFile)
	}
	if c.Quota.Redis.Sentinel.PasswordFile != "" {
		out = append(out, c.Quota.Redis.Sentinel.PasswordFile)
	}
	return out
}

// ExposedToOthers reports whether path is a regular file that can be read or written by
// its group or by other users (mode & 0o077 != 0): a secret in it is exposed.
func ExposedToOthers(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0
}

// MaxSecretFileBytes bounds a key or URL file (64 KiB): larger files are
// refused, not read whole.
const MaxSecretFileBytes = 64 << 10

// ReadSecretFile returns the first line of the secret file at path,
// trimmed, reading at most MaxSecretFileBytes. Errors never include the
// content.
func ReadSecretFile(path string) (string, error) { return readSecretFile(path) }

// readSecretFile returns the first line of path, trimmed. Errors never
// include the content; they say what to do.
func readSecretFile(path string) (string, error) {
	// Stat first: reading a FIFO would block until a writer comes.
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("not a regular file (%s): write the secret alone on the first line of a regular file, chmod 600", fi.Mode().Type())
	case fi.Size() > MaxSecretFileBytes:
		return "", fmt.Errorf("%d bytes, larger than %d KiB: a secret file holds one line; check the path", fi.Size(), MaxSecretFileBytes>>10)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes))
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line), nil
}
