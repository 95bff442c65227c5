package engine

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Invocation is how a job started by cron or systemd runs trendfetch with the settings in force
// here: the binary's absolute path and flags (Args), NAME=value settings without a flag (Env),
// and warnings (Warnings; Unsent: about secrets the environment holds that a cron job will not
// have and no file setting gives it: under systemd, credentials carry them).
type Invocation struct {
	Args, Env, Warnings, Unsent []string
}

// Invocation builds the command reproducing this process's settings for cron or systemd:
// configFile, and each setting given by a root flag (flagged) or a variable set here (the
// database always). A secret is never written (a warning names the file setting to use); a
// value that cannot be written safely is refused (writable).
func (e *Engine) Invocation(configFile string, flagged func(flag string) bool) (Invocation, error) {
	bin, err := binaryPath()
	if err != nil {
		return Invocation{}, err
	}
	inv := Invocation{Args: []string{bin}}
	for _, s := range config.Settings() {
		value, warning := e.invocationValue(s, configFile, flagged)
		if s.Secret != "" && warning != "" {
			inv.Unsent = append(inv.Unsent, warning)
		} else if warning != "" {
			inv.Warnings = append(inv.Warnings, warning)
		}
		if value == "" {
			continue
		}
		if err := inv.add(s, value); err != nil {
			return inv, err
		}
	}
	for _, cr := range e.cfg.Credentials {
		if cr.KeyEnv != "" && cr.KeyFile == "" && e.fromEnv(cr.KeyEnv) {
			inv.Unsent = append(inv.Unsent, "WARNING: $"+cr.KeyEnv+" is set here, but the job will not have it: use api_key_file (or api_key_credential under systemd)")
		}
	}
	return inv, nil
}

// binaryPath is this binary's absolute path, refused when a job line cannot hold it.
func binaryPath() (string, error) {
	bin, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this binary's path: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", err
	}
	return bin, writable("this binary's path", bin)
}

// fromEnv reports whether variable name is set here to a non-empty value.
func (e *Engine) fromEnv(name string) bool {
	v, ok := e.o.LookupEnv(name)
	return name != "" && ok && v != ""
}

// invocationValue is the value a job is given for setting s ("" = none): configFile for
// --config, the value in force when a flag or the environment set it here (or s.Always). A
// secret, or a database URL with a password, is never written: warning says what to use.
func (e *Engine) invocationValue(s config.Setting, configFile string, flagged func(string) bool) (value, warning string) {
	switch {
	case s.Secret != "":
		if e.fromEnv(s.Env) && e.secretFile(s.Secret) == "" {
			warning = "WARNING: $" + s.Env + " is set here, but the job will not have it: use " + s.Secret
		}
		return "", warning
	case s.Key == "": // --config: the file read, wherever its name came from
		return configFile, ""
	case s.Key == "database" && e.cfg.Store.URLFile != "":
		return "", "" // the job reads store.url_file from the config, as here
	case s.Always || s.Flag != "" && flagged(s.Flag) || e.fromEnv(s.Env):
		value = s.Value(e.cfg)
	}
	if s.Key == "database" && len(DatabaseSecrets(value)) > 0 { // never written out
		return "", "WARNING: the database URL holds a password, which no job line shows: give the URL in store.url_file"
	}
	return value, ""
}

// secretFile is the value of the *_file setting named setting ("" = unset).
func (e *Engine) secretFile(setting string) string {
	r := e.cfg.Quota.Redis
	return map[string]string{"quota.redis.url_file": r.URLFile, "quota.redis.sentinel.password_file": r.Sentinel.PasswordFile,
		"runs.checkin_url_file": e.cfg.Runs.CheckinURLFile}[setting]
}

// add writes setting s = value as a flag, or a NAME=value line when s has no flag; a path
// absolute, a value a job line cannot hold refused.
func (inv *Invocation) add(s config.Setting, value string) error {
	if s.File && store.EngineOf(value) == store.SQLite {
		var err error
		if value, err = filepath.Abs(value); err != nil {
			return err
		}
	}
	name := cmp.Or(s.Key, "config") + " (" + s.Env + ")"
	if s.Flag != "" {
		name = cmp.Or(s.Key, "config") + " (--" + s.Flag + ", " + s.Env + ")"
	}
	if err := writable(name, value); err != nil {
		return err
	}
	if s.Flag != "" {
		inv.Args = append(inv.Args, "--"+s.Flag, value)
	} else {
		inv.Env = append(inv.Env, s.Env+"="+value)
	}
	return nil
}

// writable refuses (a *SettingError naming setting) a value with a control character: in a
// crontab line or a systemd unit a newline would start a command of its own.
func writable(setting, value string) error {
	if strings.IndexFunc(value, unicode.IsControl) < 0 {
		return nil
	}
	return &SettingError{Setting: setting + " = " + termtext.Clip(value, 200), Err: errors.New(
		"holds a newline or another control character, which cannot be written safely into a crontab line or a systemd unit; use a name without them")}
}

// DatabaseSecrets is the password of a PostgreSQL database URL (none for a SQLite path).
func DatabaseSecrets(database string) []string {
	if store.EngineOf(database) != store.PostgreSQL {
		return nil
	}
	return secret.URLSecrets(database)
}
