package engine

import (
	"errors"
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
