package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/checkin"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Main runs trendfetch with args and returns the process exit code.
// SIGINT, SIGTERM and SIGHUP cancel the context; a second signal exits at
// once. Every byte printed passes the secrets scrubber.
func Main(args []string, stdout, stderr io.Writer) int {
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() } // newLogger's stamps
	secrets := &secret.Set{}
	a := &app{lookupEnv: os.LookupEnv, secrets: secrets}
	a.ioStreams = ioStreams{stdoutTTY: isTerminal(stdout), stderrTTY: isTerminal(stderr)}
	stdout, stderr = secrets.Writer(stdout), secrets.Writer(stderr)
	a.stdout, a.stderr = stdout, stderr
	secrets.AddKey(os.Getenv(config.DefaultKeyEnv))
	for _, s := range config.Settings() {
		switch {
		case s.Key == "runs.checkin_url": // the ping key in its path
			secrets.Add(checkin.Secrets(os.Getenv(s.Env))...)
		case s.Key == "database": // a PostgreSQL URL's password
			secrets.Add(engine.DatabaseSecrets(os.Getenv(s.Env))...)
		case s.Secret != "": // a Redis URL's password, or the whole value when it is no URL
			secrets.Add(secret.URLSecrets(os.Getenv(s.Env))...)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs // never closed: signal.Stop only stops delivery
		cancel(&signalError{sig: s})
		s = <-sigs
		// The config may still be loading: reported as before it loaded.
		early := &app{ioStreams: ioStreams{stderr: stderr, stderrTTY: a.stderrTTY}, lookupEnv: os.LookupEnv}
		early.reportError(fmt.Errorf("second %s: exiting now", signalName(s)), signalExit(s))
		os.Exit(signalExit(s))
	}()

	root := newRootCmd(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var se *signalError
	if err != nil && errors.As(context.Cause(ctx), &se) && errors.Is(err, context.Canceled) {
		err = se // "interrupted by SIGTERM", not "context canceled"
	}
	code := exitCode(ctx, err)
	if err != nil {
		a.reportError(err, code)
	}
	return code
}

// reportError prints the error that ends the process to stderr: one line
// (at most 2,000 characters) or one per failed region, as JSON events when
// logs are JSON, else "trendfetch: ..." lines and a "Try: ..." hint.
func (a *app) reportError(err error, code int) {
	lines := []string{termtext.Clip(strings.Join(strings.Fields(err.Error()), " "), 2000)}
	if rf := (*engine.Failures)(nil); errors.As(err, &rf) {
		lines = strings.Split(rf.Error(), "\n")
	}
	hint := ""
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		hint = ue.Hint
	}
	env, _ := a.lookupEnv(config.Lookup("log.format").Env)
	if jsonLogs(cmp.Or(a.logFormat, env), a.stderrTTY) {
		log := a.log // before the config loaded a JSON one; whatever log.level
		if a.cfg == nil {
			log = newLogger(a.stderr, config.Log{Level: "info", Format: "json"}, false)
		}
		log = log.Level(zerolog.TraceLevel)
		for _, line := range lines {
			ev := log.Error()
			switch code {
			case exitcode.TempFail: // a denial: the run's record logged its one warning
				ev = log.Info()
			case exitcode.Running, exitcode.SIGHUP, exitcode.SIGINT, exitcode.SIGTERM:
				ev = log.Warn() // expected stops, not faults
			}
			if hint != "" {
				ev = ev.Str("hint", hint)
			}
			ev.Str("error", line).Int("exit_code", code).Msg("trendfetch exits")
		}
		return
	}
	for _, line := range lines {
		fmt.Fprintf(a.stderr, "trendfetch: %s\n", line)
	}
	if hint != "" {
		fmt.Fprintf(a.stderr, "Try: %s\n", hint)
	}
}

// jsonLogs reports whether log lines are JSON: log.format json, or auto
// with stderr not a terminal (tty). The one place the format is decided.
func jsonLogs(format string, tty bool) bool {
	return format == "json" || format != "console" && !tty
}

// app holds what every command of one process (or test) shares.
type app struct {
	ioStreams  // scrubbed of secrets
	lookupEnv  func(string) (string, bool)
	logFormat  string // log.format once the config is read ("" before)
	secrets    *secret.Set
	flags      map[string]*string // root flags of config.Settings by name ("" = not given)
	configFile string             // absolute path of the config file read ("" = defaults)

	cfg *config.Config
	log zerolog.Logger
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "trendfetch",
		Short: "Ingest YouTube trending charts per region under a shared API quota",
		Long: `trendfetch ingests YouTube's trending chart (videos.list chart=mostPopular) per
region into SQLite with a full-text index. Every API call first reserves its
cost in quota units from a shared per-credential limiter (embedded SQLite, or
Redis shared by every host); on denial a run stops cleanly and exits 75.

` + exitcode.Help(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{Err: flagError(c, err), Hint: c.CommandPath() + " --help"}
	})
	root.Version = versionString()
	root.SetVersionTemplate("{{.Version}}\n")
	a.flags = map[string]*string{}
	for _, s := range config.Settings() {
		if s.Flag != "" {
			a.flags[s.Flag] = root.PersistentFlags().String(s.Flag, "", s.Help+"; env $"+s.Env)
		}
	}
	root.AddCommand(newRunCmd(a), newSearchCmd(a), newRunsCmd(a), newQuotaCmd(a), newVersionCmd(a))
	root.AddCommand(newScheduleCmd(a), newCrontabCmd(a), newRegionsCmd(a), newLeaseCmd(a), newPlanCmd(a))
	root.AddCommand(newChartCmd(a), newVideoCmd(a), newExportCmd(a), newPruneCmd(a), newServeCmd(a), newCopyCmd(a), newCoverageCmd(a))
	argsAreUsage(root)
	return root
}

// withConfig is the PreRunE of the commands that need the configuration.
func (a *app) withConfig(*cobra.Command, []string) error { return a.loadConfig() }

// loadConfig loads defaults, file, env and flags, validates, and builds
// the logger, reading nothing but the config file and key files.
func (a *app) loadConfig() error {
	flags := map[string]string{}
	for name, v := range a.flags {
		flags[name] = *v
	}
	cfg, used, err := config.Load(a.lookupEnv, flags)
	if err != nil {
		return &usageError{Err: err}
	}
	a.configFile = used
	a.logFormat = cfg.Log.Format
	// The configured secrets readable now (an unreadable key is the command's error).
	for _, cr := range cfg.Credentials {
		if k, err := cr.APIKey(a.lookupEnv); err == nil {
			a.secrets.AddKey(k)
		}
	}
	a.secrets.Public(cfg.Names()...)
	a.secrets.Add(secret.URLSecrets(cfg.Quota.Redis.URL)...)
	a.secrets.Add(engine.DatabaseSecrets(cfg.Database)...)
	a.secrets.Add(cfg.Quota.Redis.Sentinel.Password)
	a.secrets.Add(checkin.Secrets(cfg.Runs.CheckinURL)...)
	if err := cfg.Validate(); err != nil {
		return err
	}
	a.cfg = cfg
	a.log = newLogger(a.stderr, cfg.Log, a.stderrTTY)
	warnExposed(a.log, cfg.SecretFiles()...)
	return nil
}

// newLogger writes JSON to w, or the console format (jsonLogs), coloured on a terminal unless
// NO_COLOR is set (no-color.org). Events are stamped in UTC (Main sets zerolog.TimestampFunc).
func newLogger(w io.Writer, lc config.Log, tty bool) zerolog.Logger {
	level, err := zerolog.ParseLevel(lc.Level)
	if err != nil {
		level = zerolog.InfoLevel
	}
	if !jsonLogs(lc.Format, tty) {
		noColor := os.Getenv("NO_COLOR") != "" || !tty
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05Z07:00", TimeLocation: time.UTC, NoColor: noColor}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
