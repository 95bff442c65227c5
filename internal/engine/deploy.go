package engine

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/deploy"
	"github.com/trendfetch/trendfetch/internal/schedule"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Crontab is the crontab lines of the configured regions under sc (the schedule with
// `crontab`'s flags), each run as inv, logging under schedule.log_dir.
func (e *Engine) Crontab(sc config.Schedule, title string, inv Invocation) (deploy.Crontab, error) {
	jobs, err := e.cronJobs(sc, "cron")
	if err != nil {
		return deploy.Crontab{}, err
	}
	logDir, err := filepath.Abs(cmp.Or(sc.LogDir, config.DefaultLogDir))
	if err != nil {
		return deploy.Crontab{}, err
	}
	if err := writable("schedule.log_dir (--log-dir)", logDir); err != nil {
		return deploy.Crontab{}, err
	}
	cr, err := e.cfg.FindCredential(e.cfg.Credential)
	if err != nil {
		return deploy.Crontab{}, err
	}
	return deploy.Crontab{Title: title, Comments: append(slices.Clone(inv.Warnings), inv.Unsent...), Args: inv.Args, Env: inv.Env,
		LogDir: logDir, TimeZone: sc.Timezone, KeyFile: cr.KeyFile != "", Jobs: jobs}, nil
}

// SystemdUnits is, per configured region under sc, a .service running it as inv and a .timer at
// its staggered ticks; a region's own cron spec is refused (no OnCalendar= form here). A secret
// this environment gives reaches the units as a credential (LoadCredential=), so inv.Unsent
// warns of nothing here; the files the config names are read by the units' user
// (docs/operations.md, "systemd timers").
func (e *Engine) SystemdUnits(sc config.Schedule, title string, inv Invocation) (deploy.Units, error) {
	cfg := e.cfg
	u := deploy.Units{
		Title: title, Binary: inv.Args[0], Env: inv.Env, Comments: inv.Warnings, MetricsTextfile: cfg.Runs.MetricsTextfile,
		SecretFiles: cfg.SecretFiles(), KeyCredential: config.KeyCredentialPrefix + cfg.Credential,
	}
	u.Config, u.Flags = unitFlags(inv.Args[1:], store.EngineOf(cfg.Database) == store.PostgreSQL)
	u.Credentials = e.unitCredentials()
	if err := e.unitDatabases(&u); err != nil {
		return u, err
	}
	if cr, err := cfg.FindCredential(cfg.Credential); err == nil && cr.KeyFile != "" {
		u.KeyCredential = "" // the key file wins over a credential (config.Credential.APIKey)
	} else if err == nil && cr.KeyCredential != "" {
		u.KeyCredential = cr.KeyCredential
	}
	var err error
	u.Timers, err = timers(sc, cfg.Regions)
	return u, err
}

// unitFlags splits Invocation's flags into the config file and the flags ExecStart= passes
// on; a SQLite --database is left out (Units places it), a PostgreSQL URL kept.
func unitFlags(args []string, postgres bool) (configFile string, flags []string) {
	for i := 0; i+1 < len(args); i += 2 {
		switch {
		case args[i] == "--config":
			configFile = args[i+1]
		case args[i] != "--database" || postgres:
			flags = append(flags, args[i], args[i+1])
		}
	}
	return configFile, flags
}

// unitCredentials is the systemd credentials (config's names) of the secrets in force that no
// file setting gives: the units read them from $CREDENTIALS_DIRECTORY.
func (e *Engine) unitCredentials() []string {
	r, c := e.cfg.Quota.Redis, e.cfg.Runs
	var out []string
	for _, s := range []struct{ value, file, name string }{
		{r.URL, r.URLFile, "redis-url"},
		{r.Sentinel.Password, r.Sentinel.PasswordFile, "redis-sentinel-password"},
		{c.CheckinURL, c.CheckinURLFile, config.CheckinURLCredential},
	} {
		if s.value != "" && s.file == "" {
			out = append(out, s.name)
		}
	}
	return out
}

// unitDatabases sets u's SQLite database and, when not quota.db beside it, the embedded quota
// backend's file, both absolute.
func (e *Engine) unitDatabases(u *deploy.Units) error {
	cfg := e.cfg
	var err error
	if u.Postgres = store.EngineOf(cfg.Database) == store.PostgreSQL; !u.Postgres {
		if u.Database, err = filepath.Abs(cfg.Database); err != nil {
			return err
		}
	}
	if q := cfg.Quota; q.Backend == "sqlite" && q.SQLite.Path != filepath.Join(filepath.Dir(cfg.Database), "quota.db") {
		u.QuotaDB, err = filepath.Abs(q.SQLite.Path)
	}
	return err
}

// timers is each region's .timer under sc: OnCalendar= at its staggered ticks, in the schedule's
// zone; a region's own cron spec is a usage error.
func timers(sc config.Schedule, regions []string) ([]deploy.Timer, error) {
	plan, err := sc.Plan(regions)
	if err != nil {
		return nil, err
	}
	var out []deploy.Timer
	for _, p := range plan {
		if p.Explicit {
			return nil, Usagef("trendfetch crontab --format systemd --help", "schedule.regions.%s %q: a cron spec is not converted to OnCalendar; write its timer by hand", p.Region, p.Spec)
		}
		cal, err := schedule.OnCalendar(sc.Every.Std(), p.Offset)
		if err != nil {
			return nil, Usagef("trendfetch crontab --format systemd --every 2h --stagger 3m", "region %s: %v", p.Region, err)
		}
		if sc.Timezone != "" {
			cal += " " + sc.Timezone
		}
		out = append(out, deploy.Timer{Region: p.Region, OnCalendar: cal, Spec: p.Spec})
	}
	return out, nil
}

// KubernetesCronJobs is one batch/v1 CronJob per configured region under sc, running image.
// Each secret reaches the pods where the configuration reads it: a *_file setting as the
// Secret's file at that path (under deploy.ConfigDir, else refused: exit 2 naming it), else a
// variable from the Secret. What the pods replace (an embedded database or quota backend) is a
// header note (docs/operations.md, "Kubernetes").
func (e *Engine) KubernetesCronJobs(sc config.Schedule, title, image string) (deploy.CronJobs, error) {
	jobs, err := e.cronJobs(sc, "kubernetes")
	if err != nil {
		return deploy.CronJobs{}, err
	}
	cj := deploy.CronJobs{Jobs: jobs, Title: title, Image: image, TimeZone: cmp.Or(sc.Timezone, os.Getenv("TZ"), "Etc/UTC"), Every: sc.Every.Std()}
	if e.cfg.Credential != config.Default().Credential {
		cj.Flags = []string{"--credential", e.cfg.Credential}
	}
	cr, err := e.cfg.FindCredential(e.cfg.Credential)
	if err != nil {
		return cj, err
	}
	if cr.KeyEnv == "" && cr.KeyFile == "" {
		return cj, Usagef("trendfetch crontab --format kubernetes --help", "credential %q has no api_key_env or api_key_file: a CronJob gives the key from its Secret as a variable or a file; set one", cr.Name)
	}
	for _, s := range e.podSecrets(cr) {
		if err := addPodSecret(&cj, s); err != nil {
			return cj, err
		}
	}
	cj.Notes = e.podNotes()
	return cj, nil
}

// podSecret is a secret a pod needs: the *_file setting naming its file ("" = none: the
// variable of SecretEnv) and where the Secret holds it.
type podSecret struct {
	setting, file string
	deploy.SecretEnv
}

// podSecrets is each secret the configuration needs in a pod, with the file it names if any.
func (e *Engine) podSecrets(cr config.Credential) []podSecret {
	c, r := e.cfg, e.cfg.Quota.Redis
	out := []podSecret{
		{"credentials[" + cr.Name + "].api_key_file", cr.KeyFile, deploy.SecretEnv{Env: cr.KeyEnv, Key: "youtube-api-key"}},
		{"store.url_file", c.Store.URLFile, deploy.SecretEnv{Env: config.Lookup("database").Env, Key: "database-url"}},
		{"quota.redis.url_file", r.URLFile, deploy.SecretEnv{Env: config.Lookup("quota.redis.url").Env, Key: "redis-url",
			Optional: len(r.Cluster) > 0 || r.Sentinel.Configured()}},
	}
	if r.Sentinel.Configured() {
		out = append(out, podSecret{"quota.redis.sentinel.password_file", r.Sentinel.PasswordFile,
			deploy.SecretEnv{Env: config.Lookup("quota.redis.sentinel.password").Env, Key: "redis-sentinel-password", Optional: true}})
	}
	return append(out, podSecret{"runs.checkin_url_file", c.Runs.CheckinURLFile,
		deploy.SecretEnv{Env: config.Lookup("runs.checkin_url").Env, Key: "checkin-url", Optional: true}})
}

// addPodSecret adds s to cj as a variable or, when the configuration names its file, as that
// file; a file the pods' projected volume cannot hold there is a *SettingError.
func addPodSecret(cj *deploy.CronJobs, s podSecret) error {
	if s.file == "" {
		cj.Env = append(cj.Env, s.SecretEnv)
		return nil
	}
	p := filepath.Clean(s.file)
	if !strings.HasPrefix(p, deploy.ConfigDir+"/") || p == deploy.ConfigDir+"/trendfetch.yaml" ||
		slices.ContainsFunc(cj.Files, func(f deploy.SecretFile) bool { return f.Path == p }) {
		return &SettingError{Setting: s.setting + " = " + s.file, Err: fmt.Errorf(
			"the pods see the Secret's files only under %s (beside the ConfigMap's trendfetch.yaml), one per secret: name a file there", deploy.ConfigDir)}
	}
	cj.Files = append(cj.Files, deploy.SecretFile{Key: s.Key, Path: p})
	return nil
}

// podNotes says what the pods use instead of the settings they cannot honour: the embedded
// database and quota backend (pods share no file), a metrics directory they do not have.
func (e *Engine) podNotes() []string {
	c := e.cfg
	var notes []string
	if c.Store.URLFile == "" && store.EngineOf(c.Database) != store.PostgreSQL {
		notes = append(notes, fmt.Sprintf("database %s is an embedded SQLite file, which pods cannot share: theirs is the Secret's database-url, a postgres:// URL.", c.Database))
	}
	if c.Quota.Backend != "redis" {
		notes = append(notes, fmt.Sprintf("quota.backend %s (embedded) is replaced in the pods by redis (%s=redis): pods share no file.", c.Quota.Backend, config.Lookup("quota.backend").Env))
	}
	if f := c.Runs.MetricsTextfile; f != "" {
		notes = append(notes, fmt.Sprintf("runs.metrics_textfile %s is not in the pods (read-only root file system): their runs write no metrics file; use check-ins.", f))
	}
	return notes
}

// cronJobs returns each configured region's five crontab fields for format: colliding regions,
// and a region's own spec with a time zone prefix, seconds or @every, are usage errors.
func (e *Engine) cronJobs(sc config.Schedule, format string) ([]deploy.Job, error) {
	every, step := sc.Every.Std(), sc.StaggerStep()
	if n := len(e.cfg.Regions); n > 1 && time.Duration(n-1)*step >= every {
		return nil, Usagef("trendfetch crontab --stagger 1m", "%d regions x stagger %s reach the next tick (every %s): regions would collide", n, step, every)
	}
	plan, err := sc.Plan(e.cfg.Regions)
	if err != nil {
		return nil, err
	}
	var jobs []deploy.Job
	for _, p := range plan {
		fields := p.Spec
		if p.Explicit {
			if schedule.HasTZ(p.Spec) || strings.HasPrefix(p.Spec, "@every") || len(strings.Fields(p.Spec)) == 6 {
				return nil, Usagef("trendfetch crontab --help", "schedule.regions.%s %q has a time zone prefix, seconds or @every: --format %s cannot express it", p.Region, p.Spec, format)
			}
		} else if fields, err = schedule.CrontabFields(every, p.Offset); err != nil {
			return nil, Usagef("trendfetch crontab --format "+format+" --every 2h --stagger 3m", "region %s: %v", p.Region, err)
		}
		jobs = append(jobs, deploy.Job{Region: p.Region, Schedule: fields})
	}
	return jobs, nil
}
