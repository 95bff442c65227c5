package engine

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
)

// deployEngine is an engine over cfg (validated) with env as its environment; no store is
// opened: the deploy use cases only render.
func deployEngine(t *testing.T, cfg *config.Config, env map[string]string) *Engine {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return New(Options{Config: cfg, Log: zerolog.Nop(), Version: "test",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

// TestCrontabIntervalHintIsAccepted: an interval cron cannot express (90m) is a usage error
// whose hint is a command `crontab` accepts: its --format is one of cron, systemd,
// kubernetes, and its --every renders.
func TestCrontabIntervalHintIsAccepted(t *testing.T) {
	cfg := config.Default()
	cfg.Database, cfg.Regions = t.TempDir()+"/tf.db", []string{"US", "GB"}
	e := deployEngine(t, cfg, nil)
	sc := cfg.Schedule
	sc.LogDir, sc.Every = t.TempDir(), config.Duration(90*time.Minute)
	_, err := e.Crontab(sc, "title", Invocation{Args: []string{"/usr/bin/trendfetch"}})
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("--every 90m: %v, want a usage error", err)
	}
	words := strings.Fields(ue.Hint)
	for i, w := range words {
		switch {
		case w == "--format" && !strings.Contains(" cron systemd kubernetes ", " "+words[i+1]+" "):
			t.Errorf("hint %q: crontab refuses --format %s", ue.Hint, words[i+1])
		case w == "--every":
			d, err := time.ParseDuration(words[i+1])
			if err != nil {
				t.Fatal(err)
			}
			sc.Every = config.Duration(d)
		}
	}
	if _, err := e.Crontab(sc, "title", Invocation{Args: []string{"/usr/bin/trendfetch"}}); err != nil {
		t.Errorf("the hint %q is refused too: %v", ue.Hint, err)
	}
}

// render is what r writes.
func render(t *testing.T, r interface{ Render(io.Writer) error }) string {
	t.Helper()
	var b strings.Builder
	if err := r.Render(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDeployHeadersWarnOnlyOfUnhandledSecrets: a secret set in this environment is warned
// about only where the job would lack it: not in crontab lines when the config names its file
// (api_key_file; the Redis URL still is), not in systemd units that load it as a credential (the key, the Redis
// URL); and units do not load a key credential that the key file overrides.
func TestDeployHeadersWarnOnlyOfUnhandledSecrets(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"YOUTUBE_API_KEY": "AIzaFromHere", "TRENDFETCH_REDIS_URL": "redis://10.0.0.5:6379/0"}
	cfg := config.Default()
	cfg.Database, cfg.Regions, cfg.Quota.Redis.URL = filepath.Join(dir, "tf.db"), []string{"US"}, env["TRENDFETCH_REDIS_URL"]
	sc := cfg.Schedule
	sc.LogDir = dir
	keyFile := cfg.Credentials[0]
	keyFile.KeyFile = "/etc/trendfetch/key"
	withFile := *cfg
	withFile.Credentials = []config.Credential{keyFile}
	for _, tc := range []struct {
		name   string
		cfg    *config.Config
		format string
	}{{"cron, api_key_file", &withFile, "cron"}, {"systemd", cfg, "systemd"}, {"systemd, api_key_file", &withFile, "systemd"}} {
		e := deployEngine(t, tc.cfg, env)
		inv, err := e.Invocation("", func(string) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		var out string
		if tc.format == "cron" {
			c, err := e.Crontab(sc, "title", inv)
			if err != nil {
				t.Fatal(err)
			}
			out = render(t, c)
		} else {
			u, err := e.SystemdUnits(sc, "title", inv)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if _, err := u.Render(&b); err != nil {
				t.Fatal(err)
			}
			out = b.String()
		}
		unwanted := []string{"$YOUTUBE_API_KEY is set here", "give the API key with api_key_file"}
		if tc.format == "systemd" {
			unwanted = append(unwanted, "is set here") // every secret here is a credential of the units
		}
		for _, unwanted := range unwanted {
			if strings.Contains(out, unwanted) {
				t.Errorf("%s: %q warns of a secret the job has:\n%s", tc.name, unwanted, out)
			}
		}
		keyCred := strings.Contains(out, "LoadCredential=youtube-api-key-default:")
		if tc.format == "systemd" && (keyCred == (tc.cfg == &withFile) || !strings.Contains(out, "LoadCredential=redis-url:/etc/trendfetch/redis-url")) {
			t.Errorf("%s: key credential %v (want it without api_key_file only), and the Redis URL's credential:\n%s", tc.name, keyCred, out)
		}
	}
}
