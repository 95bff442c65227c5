package engine

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

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

// TestKubernetesSecretsReachThePodsWhereTheConfigReadsThem: the secrets a configuration
// reads from files (an api_key_file without api_key_env, store.url_file, quota.redis.url_file)
// are the Secret's files at those paths, the rest variables; a file outside the pods' config
// directory is refused naming its setting; an embedded database and quota backend are notes.
func TestKubernetesSecretsReachThePodsWhereTheConfigReadsThem(t *testing.T) {
	cfg := config.Default()
	cfg.Regions, cfg.Database = []string{"US"}, "postgres://tf@db.example/tf"
	cfg.Credentials = []config.Credential{{Name: "default", KeyFile: "/etc/trendfetch/youtube-api-key"}}
	cfg.Store.URLFile = "/etc/trendfetch/database-url"
	cfg.Quota.Backend, cfg.Quota.Redis.URL, cfg.Quota.Redis.URLFile = "redis", "redis://r.example:6379/0", "/etc/trendfetch/redis-url"
	cj, err := deployEngine(t, cfg, nil).KubernetesCronJobs(cfg.Schedule, "title", "img:1")
	if err != nil {
		t.Fatalf("KubernetesCronJobs: %v", err)
	}
	out := render(t, cj)
	var doc struct {
		Spec struct {
			JobTemplate struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct{ Env []struct{ Name string } }
							Volumes    []struct {
								Projected struct {
									Sources []struct {
										Secret struct{ Items []struct{ Key, Path string } }
									}
								}
							}
						}
					}
				}
			} `yaml:"jobTemplate"`
		}
	}
	_, manifest, _ := strings.Cut(out, "\napiVersion")
	if err := yaml.Unmarshal([]byte("apiVersion"+manifest), &doc); err != nil {
		t.Fatal(err)
	}
	pod := doc.Spec.JobTemplate.Spec.Template.Spec
	files := map[string]string{}
	for _, src := range pod.Volumes[0].Projected.Sources {
		for _, it := range src.Secret.Items {
			files["/etc/trendfetch/"+it.Path] = it.Key
		}
	}
	want := map[string]string{"/etc/trendfetch/youtube-api-key": "youtube-api-key", "/etc/trendfetch/database-url": "database-url", "/etc/trendfetch/redis-url": "redis-url"}
	if fmt.Sprint(files) != fmt.Sprint(want) {
		t.Errorf("the Secret's files in the pod %v, want %v\n%s", files, want, out)
	}
	var env []string
	for _, e := range pod.Containers[0].Env {
		env = append(env, e.Name)
	}
	if want := []string{"TRENDFETCH_QUOTA_BACKEND", "TRENDFETCH_LOG_FORMAT", "TRENDFETCH_CHECKIN_URL"}; !slices.Equal(env, want) {
		t.Errorf("variables %q, want %q (a variable would contradict the file the config reads)", env, want)
	}

	cfg.Credentials[0].KeyFile = "/srv/keys/youtube"
	_, err = deployEngine(t, cfg, nil).KubernetesCronJobs(cfg.Schedule, "title", "img:1")
	var se *SettingError
	if !errors.As(err, &se) || !strings.Contains(se.Setting, "api_key_file = /srv/keys/youtube") {
		t.Errorf("a key file outside /etc/trendfetch: %v, want a setting error naming it", err)
	}

	embedded := config.Default()
	embedded.Regions, embedded.Database = []string{"US"}, filepath.Join(t.TempDir(), "tf.db")
	cj, err = deployEngine(t, embedded, nil).KubernetesCronJobs(embedded.Schedule, "title", "img:1")
	if err != nil {
		t.Fatal(err)
	}
	if out := render(t, cj); !strings.Contains(out, "is an embedded SQLite file") || !strings.Contains(out, "quota.backend sqlite (embedded) is replaced") {
		t.Errorf("no note of the embedded database and quota backend:\n%s", out)
	}
}
