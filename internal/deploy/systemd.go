// Package deploy renders trendfetch's scheduled runs as systemd units (Units), Kubernetes
// CronJobs (CronJobs) and crontab lines (Crontab), for `trendfetch crontab` (docs/operations.md,
// "Scheduling").
package deploy

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// successExitStatus declares the exit codes of a run that are no failure.
var successExitStatus = func() string {
	var notes, codes []string
	for _, n := range exitcode.NotFailures {
		c := exitcode.Codes[slices.IndexFunc(exitcode.Codes, func(c exitcode.Code) bool { return c.Code == n })]
		notes = append(notes, fmt.Sprintf("%d: %s", n, c.Short))
		codes = append(codes, fmt.Sprint(n))
	}
	return fmt.Sprintf("# %s: not failures.\nSuccessExitStatus=%s\n", strings.Join(notes, ", "), strings.Join(codes, " "))
}()

// Where the systemd units put things; the sandbox is docs/operations.md's ("systemd timers").
const (
	StateDir = "/var/lib/trendfetch"       // StateDirectory=trendfetch, owned by User
	Binary   = "/usr/local/bin/trendfetch" // trendfetch when it sits where the service cannot see it
	EtcDir   = "/etc/trendfetch"           // the config file and the files LoadCredential= reads as root
	User     = "trendfetch"                // the system user and group of the services
)

// private maps the trees the units' sandbox hides or leaves read-only to the option doing it.
var private = map[string]string{
	"/tmp": "PrivateTmp=yes hides it", "/var/tmp": "PrivateTmp=yes hides it",
	"/home": "ProtectHome=read-only", "/root": "ProtectHome=read-only", "/run/user": "ProtectHome=read-only",
}

// privateTree returns the tree of private holding path and what the sandbox does to it, or "".
func privateTree(path string) string {
	for dir, why := range private {
		if under(path, dir) {
			return dir + " (" + why + ")"
		}
	}
	return ""
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// Timer is one region's timer: OnCalendar is a systemd calendar event (systemd.time(7)).
type Timer struct {
	Region, OnCalendar, Spec string
}

// Units is what the systemd units of one configuration need; paths are absolute.
type Units struct {
	Title           string   // the header's first line
	Comments        []string // further header lines
	Binary          string   // this trendfetch
	Config          string   // the config file ("" = none)
	Database        string   // the SQLite database ("" = StateDir/trendfetch.db; unused when Postgres)
	Postgres        bool     // the database is PostgreSQL: its --database, if any, is in Flags
	QuotaDB         string   // the embedded quota backend's file when not quota.db beside Database
	Flags           []string // further flags (--credential ...)
	Env             []string // NAME=value settings without a flag (QuotaDB replaces TRENDFETCH_QUOTA_DB's)
	KeyCredential   string   // the systemd credential holding the API key ("" = the key is in a file)
	Credentials     []string // further ones, loaded from EtcDir/NAME (secrets the caller's environment gave)
	SecretFiles     []string // the files the service reads secrets from (the config's *_file settings)
	MetricsTextfile string   // runs.metrics_textfile ("" = off)
	Timers          []Timer  // the regions in stagger order
}

// Render writes the header and, per region, trendfetch-REGION.service and .timer, each after a
// "# ---- NAME ----" line. A path the sandbox would hide is moved under StateDir, Binary or EtcDir,
// each move a warning (in the header too); one with no such place is an error naming the setting.
func (u Units) Render(w io.Writer) (warnings []string, err error) {
	p, err := u.place()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	u.header(&b, p)
	args, env := u.execStart(p), u.environment(p)
	for i, t := range u.Timers {
		after := ""
		if i > 0 {
			after = " trendfetch-" + u.Timers[i-1].Region + ".service"
		}
		u.service(&b, t, after, args, env, p.rw)
		timer(&b, t)
	}
	_, err = io.WriteString(w, b.String())
	return p.warnings, err
}

// placement is where the units put what Units names: the paths the sandbox lets the
// service see, the directories it must write (ReadWritePaths=), and a warning per move.
type placement struct {
	bin, cfg, db, qdb string
	rw, warnings      []string
}

// move records that what at from is used at to by the units (the sandbox hides from); how
// says what the operator does about it.
func (p *placement) move(what, from, to, how string) string {
	p.warnings = append(p.warnings, fmt.Sprintf("%s %s is under %s: the units use %s; %s", what, from, privateTree(from), to, how))
	return to
}

// writable adds dir to ReadWritePaths= unless under StateDir; a tree the sandbox hides is an
// error naming setting.
func (p *placement) writable(setting, dir string) error {
	if tree := privateTree(dir); tree != "" {
		return fmt.Errorf("%s %s is under %s: the service cannot write it; use a directory such as %s", setting, dir, tree, StateDir)
	}
	if !under(dir, StateDir) && !slices.Contains(p.rw, dir) {
		p.rw = append(p.rw, dir)
	}
	return nil
}

// place moves the binary, config and databases out of the trees the sandbox hides and
// collects the directories the service writes.
func (u Units) place() (placement, error) {
	p := placement{bin: u.Binary, cfg: u.Config, db: u.Database, qdb: u.QuotaDB}
	if privateTree(p.bin) != "" {
		p.bin = p.move("the binary", p.bin, Binary, "install it there: install -m 755 "+p.bin+" "+Binary)
	}
	if p.cfg != "" && privateTree(p.cfg) != "" {
		to := filepath.Join(EtcDir, "trendfetch.yaml")
		p.cfg = p.move("the config file", p.cfg, to, "copy it there: install -D -m 644 "+p.cfg+" "+to)
	}
	if err := u.placeDatabases(&p); err != nil {
		return p, err
	}
	if u.MetricsTextfile != "" {
		if err := p.writable("runs.metrics_textfile", u.MetricsTextfile); err != nil {
			return p, err
		}
	}
	for _, f := range u.SecretFiles {
		if tree := privateTree(f); tree != "" {
			return p, fmt.Errorf("key file %s is under %s: the service cannot read it; move it under %s (chmod 600, owned by %s)", f, tree, EtcDir, User)
		}
	}
	slices.Sort(p.rw)
	return p, nil
}

// placeDatabases puts the SQLite database (default StateDir/trendfetch.db) and the embedded
// quota backend's file where the service can write them.
func (u Units) placeDatabases(p *placement) error {
	if p.db == "" && !u.Postgres {
		p.db = filepath.Join(StateDir, "trendfetch.db")
	} else if p.db != "" && privateTree(p.db) != "" {
		to := filepath.Join(StateDir, filepath.Base(p.db))
		p.db = p.move("the database", p.db, to, "to keep its data, stop its runs and copy it (with quota.db beside it) there, owned by "+User)
	}
	if p.db != "" {
		if err := p.writable("database", filepath.Dir(p.db)); err != nil {
			return err
		}
	}
	if p.qdb == "" {
		return nil
	}
	if privateTree(p.qdb) != "" {
		p.qdb = p.move("the quota database", p.qdb, filepath.Join(StateDir, "quota.db"), "copy it there, owned by "+User)
	}
	return p.writable("quota.sqlite.path", filepath.Dir(p.qdb))
}

// header writes the install steps, where the database is, and the warnings.
func (u Units) header(b *strings.Builder, p placement) {
	fmt.Fprintf(b, "# %s\n", u.Title)
	b.WriteString("# Install, as root:\n")
	for _, line := range InstallSteps(u.credentialFiles()...) {
		fmt.Fprintf(b, "#   %s\n", line)
	}
	for _, f := range u.SecretFiles { // read by the service itself, not by systemd as root
		fmt.Fprintf(b, "#   chown %s: %s && chmod 600 %s\n", User, ShellQuote(f), ShellQuote(f))
	}
	b.WriteString("#   save this output through: awk '/^# ---- /{f=\"/etc/systemd/system/\"$3; next} f{print >f}'\n")
	timers := make([]string, len(u.Timers))
	for i, t := range u.Timers {
		timers[i] = "trendfetch-" + t.Region + ".timer"
	}
	fmt.Fprintf(b, "#   systemctl daemon-reload && systemctl enable --now %s\n", strings.Join(timers, " "))
	b.WriteString("# Check: systemctl list-timers 'trendfetch-*'; journalctl -u 'trendfetch-*'\n")
	if u.Postgres {
		b.WriteString("# The dataset is in PostgreSQL (store.url_file in the config, or --database).\n")
	} else {
		fmt.Fprintf(b, "# The database is %s (StateDirectory=, owned by %s).\n", p.db, User)
	}
	b.WriteString("# A tick missed while the host was down runs at boot (Persistent=true), the regions one after\n# another in the stagger's order (After=), never together.\n")
	for _, c := range u.Comments {
		fmt.Fprintf(b, "# %s\n", c)
	}
	for _, w := range p.warnings {
		fmt.Fprintf(b, "# WARNING: %s\n", w)
	}
}

// execStart is ExecStart='s command line before "run --region R": the binary, the config,
// the SQLite database and the further flags, each quoted.
func (u Units) execStart(p placement) string {
	args := []string{p.bin}
	if p.cfg != "" {
		args = append(args, "--config", p.cfg)
	}
	if p.db != "" {
		args = append(args, "--database", p.db)
	}
	args = append(args, u.Flags...)
	for i := range args {
		args[i] = strings.ReplaceAll(Quote(args[i]), "$", "$$") // ExecStart= expands $NAME and ${NAME}
	}
	return strings.Join(args, " ")
}

// environment is the Environment= settings: Env with the quota database where the units put it.
func (u Units) environment(p placement) []string {
	qdbEnv := config.Lookup("quota.sqlite.path").Env + "="
	env := slices.DeleteFunc(slices.Clone(u.Env), func(kv string) bool { return strings.HasPrefix(kv, qdbEnv) })
	if p.qdb != "" {
		env = append(env, qdbEnv+p.qdb)
	}
	return env
}

// service writes region t's oneshot .service, ordered after the unit named in after (if any).
func (u Units) service(b *strings.Builder, t Timer, after, args string, env, rw []string) {
	fmt.Fprintf(b, "\n# ---- trendfetch-%s.service ----\n", t.Region)
	fmt.Fprintf(b, "[Unit]\nDescription=trendfetch: ingest the trending chart of %s\nWants=network-online.target\nAfter=network-online.target%s", t.Region, after)
	fmt.Fprintf(b, "\n\n[Service]\nType=oneshot\nUser=%s\nGroup=%s\nStateDirectory=trendfetch\n", User, User)
	for _, kv := range env {
		fmt.Fprintf(b, "Environment=%s\n", Quote(kv))
	}
	if u.KeyCredential != "" {
		fmt.Fprintf(b, "LoadCredential=%s:%s/youtube-api-key\n", strings.ReplaceAll(u.KeyCredential, "%", "%%"), EtcDir)
	}
	for _, name := range u.Credentials {
		fmt.Fprintf(b, "LoadCredential=%s:%s/%s\n", name, EtcDir, name)
	}
	fmt.Fprintf(b, "ExecStart=%s run --region %s\n", args, t.Region)
	b.WriteString(successExitStatus)
	b.WriteString("NoNewPrivileges=yes\nProtectSystem=strict\nProtectHome=read-only\nPrivateTmp=yes\n")
	for _, p := range rw {
		fmt.Fprintf(b, "ReadWritePaths=%s\n", Quote(p))
	}
}

// InstallSteps is the shell lines creating the services' user and, typed into no shell history,
// each credential file under EtcDir that LoadCredential= reads (root's, mode 0600); the
// generated units and configs/trendfetch.service give the same.
func InstallSteps(credentials ...string) []string {
	steps := []string{fmt.Sprintf("useradd --system --user-group --home-dir %s --shell /usr/sbin/nologin %s", StateDir, User)}
	for _, name := range credentials {
		steps = append(steps, fmt.Sprintf("install -d %s && (umask 077 && cat >%s/%s)   # paste it, then Ctrl-D", EtcDir, EtcDir, name))
	}
	return steps
}

// credentialFiles is the files under EtcDir that LoadCredential= reads.
func (u Units) credentialFiles() []string {
	if u.KeyCredential == "" {
		return u.Credentials
	}
	return append([]string{"youtube-api-key"}, u.Credentials...)
}

// timer writes region t's .timer.
func timer(b *strings.Builder, t Timer) {
	fmt.Fprintf(b, "\n# ---- trendfetch-%s.timer ----\n", t.Region)
	fmt.Fprintf(b, "[Unit]\nDescription=trendfetch: run %s %s\n\n", t.Region, t.Spec)
	fmt.Fprintf(b, "[Timer]\nOnCalendar=%s\n# Persistent: a tick missed while the host was down runs at boot.\nPersistent=true\n# The stagger is minutes: fire within a second of the tick.\nAccuracySec=1s\n\n", t.OnCalendar)
	b.WriteString("[Install]\nWantedBy=timers.target\n")
}

// Quote quotes s for a systemd setting (Environment=, a path) unless safe; "%" becomes "%%"
// (systemd.unit(5), "Specifiers"). In ExecStart= "$" is also doubled (systemd.service(5)).
func Quote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if isSafe(s) {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
