package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestInvocation: the command a cron or systemd job runs, decided per setting in-process on an
// engine whose run wrote its SQLite files (the emulator's chart): the binary and the database
// always, absolute; the config file read; a setting given here by a root flag or a variable,
// as its flag or else NAME=value; a secret never, but a warning when nothing gives it to the
// job (its file setting, api_key_file); a database URL only without a password (store.url_file
// read by the job instead); a value with a control character refused naming its setting.
func TestInvocation(t *testing.T) {
	ctx := context.Background()
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US", "GB")
	if err := e.Run(ctx, []string{"US"}, false); err != nil {
		t.Fatal(err)
	}
	env, flagged := map[string]string{}, map[string]bool{}
	e.o.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	invocation := func() Invocation {
		t.Helper()
		inv, err := e.Invocation("trendfetch.yaml", func(f string) bool { return flagged[f] })
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	bin, _ := os.Executable()
	bin, _ = filepath.Abs(bin)
	cwd, _ := os.Getwd()
	inv := invocation()
	if want := []string{bin, "--config", filepath.Join(cwd, "trendfetch.yaml"), "--database", e.cfg.Database}; !slices.Equal(inv.Args, want) ||
		len(inv.Env)+len(inv.Warnings)+len(inv.Unsent) != 0 {
		t.Errorf("nothing given here: %+v, want args %q only", inv, want)
	}
	if _, err := os.Stat(e.cfg.Database); err != nil {
		t.Errorf("the database given is not the run's file: %v", err)
	}

	flagged["api-endpoint"] = true
	env["TRENDFETCH_REGIONS"], env["TRENDFETCH_LOG_LEVEL"], env["TRENDFETCH_QUOTA_DB"] = "US,GB", "debug", "q.db"
	env["TRENDFETCH_REDIS_URL"], env["TRENDFETCH_CHECKIN_URL"], env["YOUTUBE_API_KEY"] = "redis://:pw@r:6379/0", "https://hc.example/ping/k/{region}", "AIzaHere"
	inv = invocation()
	if !slices.Equal(inv.Args[5:], []string{"--api-endpoint", e.cfg.API.Endpoint, "--log-level", "info"}) ||
		!slices.Equal(inv.Env, []string{"TRENDFETCH_REGIONS=US,GB", "TRENDFETCH_QUOTA_DB=" + e.cfg.Quota.SQLite.Path}) {
		t.Errorf("settings given here: args %q, env %q; want the values in force as flags, else NAME=value", inv.Args[5:], inv.Env)
	}
	unsent := strings.Join(inv.Unsent, "\n")
	for _, want := range []string{"$TRENDFETCH_REDIS_URL is set here, but the job will not have it: use quota.redis.url_file",
		"$TRENDFETCH_CHECKIN_URL is set here, but the job will not have it: use runs.checkin_url_file", "$YOUTUBE_API_KEY is set here"} {
		if !strings.Contains(unsent, want) {
			t.Errorf("unsent warnings lack %q:\n%s", want, unsent)
		}
	}
	if all := strings.Join(slices.Concat(inv.Args, inv.Env, inv.Warnings, inv.Unsent), " "); strings.Contains(all, "pw@") || strings.Contains(all, "AIzaHere") || strings.Contains(all, "ping/k") {
		t.Errorf("a secret is written: %s", all)
	}
	e.cfg.Quota.Redis.URLFile, e.cfg.Runs.CheckinURLFile, e.cfg.Credentials[0].KeyFile = "/etc/tf/redis-url", "/etc/tf/checkin-url", "/etc/tf/key"
	if inv = invocation(); len(inv.Unsent) != 0 {
		t.Errorf("secrets whose file settings are set: %q, want no warning", inv.Unsent)
	}

	for _, c := range []struct{ database, urlFile, arg, warning string }{
		{"postgres://tf@db.example/tf", "", "postgres://tf@db.example/tf", ""},
		{"postgres://tf:s3cret@db.example/tf", "", "", "the database URL holds a password"},
		{"postgres://tf:s3cret@db.example/tf", "/etc/tf/database-url", "", ""},
	} {
		e.cfg.Database, e.cfg.Store.URLFile = c.database, c.urlFile
		inv = invocation()
		i := slices.Index(inv.Args, "--database")
		if (i < 0) != (c.arg == "") || i >= 0 && inv.Args[i+1] != c.arg || (len(inv.Warnings) > 0) != (c.warning != "") ||
			c.warning != "" && !strings.Contains(inv.Warnings[0], c.warning) || strings.Contains(strings.Join(inv.Args, " "), "s3cret") {
			t.Errorf("database %s, store.url_file %q: args %q, warnings %q; want --database %q, warning %q", c.database, c.urlFile, inv.Args, inv.Warnings, c.arg, c.warning)
		}
	}

	e.cfg.Database, e.cfg.Store.URLFile = filepath.Join(t.TempDir(), "x\n* * * * * touch pwned #.db"), ""
	_, err := e.Invocation("", func(string) bool { return false })
	var se *SettingError
	if !errors.As(err, &se) || exitcode.Of(ctx, err) != exitcode.Usage || !strings.HasPrefix(se.Setting, "database (--database, TRENDFETCH_DATABASE) = ") {
		t.Errorf("a database path with a newline: %v, want a usage error naming the setting", err)
	}
}
