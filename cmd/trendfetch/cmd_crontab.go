package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/deploy"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/schedule"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

func newCrontabCmd(a *app) *cobra.Command {
	var (
		every, stagger        config.Duration
		logDir, format, image string
	)
	cmd := &cobra.Command{
		Use:   "crontab [--every 2h] [--stagger 3m] [--log-dir DIR] [--format cron|systemd|kubernetes [--image IMAGE]]",
		Short: "Print ready-to-paste crontab lines for the configured regions",
		Long: `Print one crontab line per configured region, staggered so that runs never
start together: region i runs i x stagger after each tick of --every. Each
line names the absolute path of this binary and of the config file in use,
and appends the run's output to DIR/REGION.log. Defaults come from the
config's schedule section (every 2h, stagger 3m, /var/log/trendfetch).
A region with its own cron spec in schedule.regions keeps that spec.

--every must divide an hour (1m-30m) or a day (1h-12h), or be 24h; the
stagger must be whole minutes. The lines fire exactly when 'trendfetch
schedule' would.

Settings in force that cron would not inherit (the database from
$TRENDFETCH_DATABASE or $XDG_DATA_HOME, the config from $TRENDFETCH_CONFIG,
other TRENDFETCH_* variables) are written as flags or NAME=value lines;
secrets in the environment are never printed: a comment says where to put
them instead.

--format systemd prints, per region, a trendfetch-REGION.service (Type=oneshot,
User=trendfetch, the database in StateDirectory=trendfetch, the API key from
the systemd credential youtube-api-key-<credential>) and a
trendfetch-REGION.timer (OnCalendar= with the stagger, Persistent=true), with
the install steps in the header. A path the units' sandbox hides (/tmp, a
home) is moved with a warning, or refused.

--format kubernetes --image IMAGE prints one batch/v1 CronJob per region
(concurrencyPolicy Forbid, exit codes 2, 3 and 75 not retried, the API key,
Redis URL and database URL from the Secret "trendfetch", the config from
the ConfigMap "trendfetch"), with the kubectl steps in the header.`,
		Example: "  trendfetch --config /etc/trendfetch/trendfetch.yaml crontab\n  trendfetch crontab --every 1h --stagger 5m | crontab -",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.loadConfig(); err != nil {
				return err
			}
			sc := a.cfg.Schedule
			if cmd.Flags().Changed("every") {
				if every.Std() < time.Minute {
					return usagef("trendfetch crontab --every 2h", "--every %s: cron's resolution is one minute", every.Std())
				}
				sc.Every, sc.Cron = every, ""
			} else if sc.Cron != "" {
				return usagef("trendfetch crontab --every 2h", "schedule.cron %q cannot be staggered into crontab lines: pass --every", sc.Cron)
			}
			if cmd.Flags().Changed("stagger") {
				if stagger < 0 {
					return usagef("trendfetch crontab --stagger 3m", "--stagger %s: must be >= 0", stagger.Std())
				}
				sc.Stagger = &stagger
			}
			if cmd.Flags().Changed("log-dir") {
				sc.LogDir = logDir
			}
			switch format {
			case "cron":
				return a.printCrontab(sc)
			case "systemd":
				return a.printSystemd(sc)
			case "kubernetes":
				if image == "" {
					return usagef("trendfetch crontab --format kubernetes --image registry.example.com/trendfetch:1.0", "--format kubernetes needs --image: the container image holding trendfetch")
				}
				return a.printKubernetes(sc, image)
			}
			return usagef("trendfetch crontab --format systemd", "--format %q: want cron, systemd or kubernetes", termtext.Clip(format, 40))
		},
	}
	cmd.Flags().Var(&every, "every", "interval between runs of a region (default: schedule.every, 2h)")
	cmd.Flags().Var(&stagger, "stagger", "offset between consecutive regions (default: schedule.stagger, 3m)")
	cmd.Flags().StringVar(&format, "format", "cron", "cron (crontab lines), systemd (a .service and a .timer per region) or kubernetes (a CronJob per region)")
	cmd.Flags().StringVar(&image, "image", "", "--format kubernetes: the container image whose PATH holds trendfetch")
	cmd.Flags().StringVar(&logDir, "log-dir", "", "directory of the per-region log files (default: schedule.log_dir, /var/log/trendfetch)")
	return cmd
}

// printCrontab writes the header and one line per configured region.
func (a *app) printCrontab(sc config.Schedule) error {
	every, step := sc.Every.Std(), sc.StaggerStep()
	jobs, err := a.cronJobs(sc, "crontab")
	if err != nil {
		return err
	}
	inv, err := a.invocation()
	if err != nil {
		return err
	}
	logDir := sc.LogDir
	if logDir == "" {
		logDir = config.DefaultLogDir
	}
	if logDir, err = filepath.Abs(logDir); err != nil {
		return err
	}
	if err := writable("schedule.log_dir (--log-dir)", logDir); err != nil {
		return err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# trendfetch: regions %s, every %s, staggered by %s (generated by `trendfetch crontab`).\n", strings.Join(a.cfg.Regions, " "), every, step)
	b.WriteString("# Install with `crontab -e` as the user owning the database (or pipe into `crontab -`).\n")
	fmt.Fprintf(&b, "# Create the log directory first: mkdir -p %s\n", shellQuote(logDir))
	b.WriteString("# cron has no login environment: give the API key with api_key_file in the config.\n")
	for _, w := range inv.warnings {
		fmt.Fprintf(&b, "# %s\n", w)
	}
	fmt.Fprintf(&b, "# Exit codes: %s.\n", exitCodesShort())
	for _, kv := range inv.env {
		fmt.Fprintf(&b, "%s\n", kv)
	}
	if sc.Timezone != "" {
		b.WriteString("# The schedule's time zone (cronie honours CRON_TZ; elsewhere set the system zone):\n")
		fmt.Fprintf(&b, "CRON_TZ=%s\n", sc.Timezone)
	}
	b.WriteString("# m h dom mon dow  command\n")
	for _, j := range jobs {
		args := append(append([]string(nil), inv.args...), "run", "--region", j.Region)
		for i := range args {
			args[i] = shellQuote(args[i])
		}
		logFile := shellQuote(filepath.Join(logDir, j.Region+".log"))
		// '%' ends the command in a crontab line unless escaped.
		line := strings.ReplaceAll(strings.Join(args, " ")+" >>"+logFile+" 2>&1", "%", `\%`)
		fmt.Fprintf(&b, "%-16s %s\n", j.Schedule, line)
	}
	_, err = fmt.Fprint(a.stdout, b.String())
	return err
}

// invocation is how a job started outside this shell runs trendfetch with
// the settings in force here: the binary's absolute path and flags (args),
// NAME=value settings that have no flag (env), and comments about secrets
// the environment holds here that the job will not have (warnings).
type invocation struct {
	args, env, warnings []string
}

// invocation builds the command that reproduces this process's settings for
// cron or systemd, which inherit none of its environment: the config file
// read, and each setting of the table (config.Settings) that a flag or a
// variable set here (the database always), as its flag, or as NAME=value
// when it has none. A secret is never written: a warning names the file
// setting to use instead. A value that cannot be written safely into a
// crontab line or a unit is refused (writable).
func (a *app) invocation() (invocation, error) {
	var inv invocation
	bin, err := os.Executable()
	if err != nil {
		return inv, fmt.Errorf("cannot find this binary's path: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return inv, err
	}
	if err := writable("this binary's path", bin); err != nil {
		return inv, err
	}
	inv.args = []string{bin}
	fromEnv := func(name string) bool { v, ok := a.lookupEnv(name); return name != "" && ok && v != "" }
	for _, s := range config.Settings() {
		var value string
		switch {
		case s.Secret != "":
			if fromEnv(s.Env) {
				inv.warnings = append(inv.warnings, "WARNING: $"+s.Env+" is set here, but the job will not have it: use "+s.Secret)
			}
			continue
		case s.Key == "": // --config: the file read, wherever its name came from
			value = a.configFile
		case s.Always || a.flag(s.Flag) != "" || fromEnv(s.Env):
			value = s.Value(a.cfg)
		}
		if s.Key == "database" && len(databaseSecrets(value)) > 0 { // never written out
			inv.warnings = append(inv.warnings, "WARNING: the database URL holds a password, which no job line shows: give the URL in store.url_file")
			continue
		}
		if value == "" {
			continue
		}
		if s.File && !store.IsPostgresURL(value) {
			if value, err = filepath.Abs(value); err != nil {
				return inv, err
			}
		}
		name := cmp.Or(s.Key, "config") + " (" + s.Env + ")"
		if s.Flag != "" {
			name = cmp.Or(s.Key, "config") + " (--" + s.Flag + ", " + s.Env + ")"
		}
		if err := writable(name, value); err != nil {
			return inv, err
		}
		if s.Flag != "" {
			inv.args = append(inv.args, "--"+s.Flag, value)
		} else {
			inv.env = append(inv.env, s.Env+"="+value)
		}
	}
	for _, cr := range a.cfg.Credentials {
		if cr.KeyEnv != "" && fromEnv(cr.KeyEnv) {
			inv.warnings = append(inv.warnings, "WARNING: $"+cr.KeyEnv+" is set here, but the job will not have it: use api_key_file (or api_key_credential under systemd)")
		}
	}
	return inv, nil
}

// writable refuses (exit 2, naming the setting) a value that cannot be
// written safely into a crontab line or a systemd unit: a newline would end
// the line and start another, a command of its own; other control
// characters corrupt it.
func writable(name, value string) error {
	if strings.IndexFunc(value, unicode.IsControl) < 0 {
		return nil
	}
	return usagef("", "%s = %s: holds a newline or another control character, which cannot be written safely into a crontab line or a systemd unit; use a name without them",
		name, termtext.Clip(value, maxEcho))
}

// exitCodesShort is the exit-code table in one line: "0 ok, 1 error, ...".
func exitCodesShort() string {
	var parts []string
	for _, c := range exitcode.Codes {
		if c.Short != "" {
			parts = append(parts, fmt.Sprintf("%d %s", c.Code, c.Short))
		}
	}
	return strings.Join(parts, ", ")
}

// printSystemd writes, per configured region, a oneshot .service running
// the region and a .timer firing it at the region's staggered ticks
// (deploy.Units); paths the units' sandbox hides are moved, with a warning.
func (a *app) printSystemd(sc config.Schedule) error {
	every := sc.Every.Std()
	inv, err := a.invocation()
	if err != nil {
		return err
	}
	plan, err := sc.Plan(a.cfg.Regions)
	if err != nil {
		return err
	}
	u := deploy.Units{
		Title: fmt.Sprintf("trendfetch: regions %s, every %s, staggered by %s (generated by `trendfetch crontab --format systemd`).",
			strings.Join(a.cfg.Regions, " "), every, sc.StaggerStep()),
		Binary: inv.args[0], Env: inv.env, Comments: inv.warnings, MetricsTextfile: a.cfg.Runs.MetricsTextfile,
		SecretFiles:   a.cfg.SecretFiles(),
		KeyCredential: config.KeyCredentialPrefix + a.cfg.Credential,
	}
	for i := 1; i+1 < len(inv.args); i += 2 {
		switch inv.args[i] {
		case "--config":
			u.Config = inv.args[i+1]
		case "--database": // a.cfg.Database below
		default:
			u.Flags = append(u.Flags, inv.args[i], inv.args[i+1])
		}
	}
	if r := a.cfg.Runs; r.CheckinURL != "" && r.CheckinURLFile == "" {
		u.Credentials = append(u.Credentials, config.CheckinURLCredential)
	}
	if u.Database, err = filepath.Abs(a.cfg.Database); err != nil {
		return err
	}
	if q := a.cfg.Quota; q.Backend == "sqlite" && q.SQLite.Path != filepath.Join(filepath.Dir(a.cfg.Database), "quota.db") {
		if u.QuotaDB, err = filepath.Abs(q.SQLite.Path); err != nil {
			return err
		}
	}
	for _, cr := range a.cfg.Credentials {
		if cr.Name == a.cfg.Credential && cr.KeyCredential != "" {
			u.KeyCredential = cr.KeyCredential
		}
	}
	for _, p := range plan {
		if p.Explicit {
			return usagef("trendfetch crontab --format systemd --help", "schedule.regions.%s %q: a cron spec is not converted to OnCalendar; write its timer by hand", p.Region, p.Spec)
		}
		cal, err := schedule.OnCalendar(every, p.Offset)
		if err != nil {
			return usagef("trendfetch crontab --format systemd --every 2h --stagger 3m", "region %s: %v", p.Region, err)
		}
		if sc.Timezone != "" {
			cal += " " + sc.Timezone
		}
		u.Timers = append(u.Timers, deploy.Timer{Region: p.Region, OnCalendar: cal, Spec: p.Spec})
	}
	warnings, err := u.Render(a.stdout)
	if err != nil {
		return usagef("trendfetch crontab --format systemd --help", "%v", err)
	}
	for _, w := range warnings {
		a.log.Warn().Msg(w)
	}
	return nil
}

// printKubernetes writes one batch/v1 CronJob per configured region
// (deploy.CronJobs): Redis for quota, the dataset and secrets from a Secret.
func (a *app) printKubernetes(sc config.Schedule, image string) error {
	every := sc.Every.Std()
	jobs, err := a.cronJobs(sc, "kubernetes")
	if err != nil {
		return err
	}
	cj := deploy.CronJobs{Jobs: jobs,
		Title: fmt.Sprintf("trendfetch: regions %s, every %s, staggered by %s (generated by `trendfetch crontab --format kubernetes`).",
			strings.Join(a.cfg.Regions, " "), every, sc.StaggerStep()),
		Image: image, TimeZone: cmp.Or(sc.Timezone, os.Getenv("TZ"), "Etc/UTC"), Every: every,
	}
	if a.cfg.Credential != config.Default().Credential {
		cj.Flags = []string{"--credential", a.cfg.Credential}
	}
	cr, err := a.cfg.FindCredential(a.cfg.Credential)
	if err != nil {
		return err
	}
	if cj.KeyEnv = cr.KeyEnv; cj.KeyEnv == "" {
		return usagef("trendfetch crontab --format kubernetes --help", "credential %q has no api_key_env: a CronJob gives the key from its Secret as an environment variable; set api_key_env", cr.Name)
	}
	return cj.Render(a.stdout)
}

// cronJobs returns each configured region's five crontab fields, for
// --format (crontab or kubernetes): regions that would collide, and a
// region's own spec with a time zone prefix, seconds or @every, are usage
// errors.
func (a *app) cronJobs(sc config.Schedule, format string) ([]deploy.Job, error) {
	every, step := sc.Every.Std(), sc.StaggerStep()
	if n := len(a.cfg.Regions); n > 1 && time.Duration(n-1)*step >= every {
		return nil, usagef("trendfetch crontab --stagger 1m", "%d regions x stagger %s reach the next tick (every %s): regions would collide", n, step, every)
	}
	plan, err := sc.Plan(a.cfg.Regions)
	if err != nil {
		return nil, err
	}
	var jobs []deploy.Job
	for _, p := range plan {
		fields := p.Spec
		if p.Explicit {
			if schedule.HasTZ(p.Spec) || strings.HasPrefix(p.Spec, "@every") || len(strings.Fields(p.Spec)) == 6 {
				return nil, usagef("trendfetch crontab --help", "schedule.regions.%s %q has a time zone prefix, seconds or @every: --format %s cannot express it", p.Region, p.Spec, format)
			}
		} else if fields, err = schedule.CrontabFields(every, p.Offset); err != nil {
			return nil, usagef("trendfetch crontab --format "+format+" --every 2h --stagger 3m", "region %s: %v", p.Region, err)
		}
		jobs = append(jobs, deploy.Job{Region: p.Region, Schedule: fields})
	}
	return jobs, nil
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
