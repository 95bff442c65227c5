package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/config"
)

// TestCrontabReproducesTheEnvironment: with the database and config given
// by the environment, the printed lines carry them as flags (cron inherits
// no environment), settings without a flag as NAME=value on each line, and a
// secret in the environment is named, never printed.
func TestCrontabReproducesTheEnvironment(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig("regions: [US, GB]\n")
	e.vars["TRENDFETCH_CONFIG"] = cfg
	e.vars["XDG_DATA_HOME"] = filepath.Join(e.dir, "xdg")
	e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, "q.db")
	e.vars["YOUTUBE_API_KEY"] = "AIzaSecretKey123"
	res := e.run("crontab")
	if res.code != 0 {
		t.Fatalf("crontab: exit %d\n%s", res.code, res.stderr)
	}
	want := " --config " + cfg + " --database " + filepath.Join(e.dir, "xdg", "trendfetch", "trendfetch.db") + " run --region GB"
	if !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, " TRENDFETCH_QUOTA_DB="+filepath.Join(e.dir, "q.db")+" TRENDFETCH_LOG_FORMAT=json "+binary+" ") {
		t.Errorf("want %q and TRENDFETCH_QUOTA_DB= on each line in:\n%s", want, res.stdout)
	}
	if strings.Contains(res.stdout, "AIzaSecretKey123") || !strings.Contains(res.stdout, "WARNING: $YOUTUBE_API_KEY is set here") {
		t.Errorf("the key must be named, never printed:\n%s", res.stdout)
	}
	e.vars["TRENDFETCH_DATABASE"] = filepath.Join(e.dir, "elsewhere.db")
	if res = e.run("crontab", "--every", "1d"); res.code != 0 || !strings.Contains(res.stdout, "--database "+filepath.Join(e.dir, "elsewhere.db")+" run") {
		t.Errorf("TRENDFETCH_DATABASE: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestCrontabSystemdUnits: --format systemd prints a .service and a .timer
// per region, saved by the header's own awk line and accepted by
// `systemd-analyze verify`; every path the units use is one their sandbox
// lets the service read (and write, for the database); paths under /tmp or
// a home are moved with a warning, or refused; each timer's OnCalendar (as
// systemd-analyze reads it) fires when the scheduler runs the region.
func TestCrontabSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err == nil {
		_, err = os.Stat("/usr/lib/systemd/system/timers.target")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze and systemd's units are required in CI (Debian's systemd): %v", err)
		}
		t.Skip("no systemd:", err)
	}
	e := newEnv(t) // HOME, the config, the binary and the default database under /tmp
	cfg := e.writeConfig("regions: [US, GB, JP]\nschedule:\n  every: 2h\n  stagger: 7m\n  timezone: Europe/London\nruns:\n  metrics_textfile: /var/lib/prometheus/node-exporter\n")
	res := e.run("--config", cfg, "crontab", "--format", "systemd")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, want := range []string{"the binary " + binary, "the config file " + cfg, "the database " + e.dbPath()} {
		if !strings.Contains(res.stderr, want) || !strings.Contains(res.stdout, "# WARNING: "+want) {
			t.Errorf("no warning %q in the header and on stderr:\n%s\n%s", want, res.stdout, res.stderr)
		}
	}
	for _, want := range []string{"useradd --system", "systemctl enable --now trendfetch-US.timer trendfetch-GB.timer trendfetch-JP.timer",
		"LoadCredential=youtube-api-key-default:/etc/trendfetch/youtube-api-key", "After=network-online.target trendfetch-GB.service",
		"Persistent=true", "SuccessExitStatus=75 3", "ReadWritePaths=/var/lib/prometheus/node-exporter"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("no %q in:\n%s", want, res.stdout)
		}
	}

	// Save the units as the header says, into a root holding systemd's own
	// units and the binary where ExecStart= expects it, and verify them.
	root := t.TempDir()
	_, awk, _ := strings.Cut(res.stdout, "save this output through: ")
	awk, _, _ = strings.Cut(awk, "\n")
	unitDir := filepath.Join(root, "etc", "systemd", "system")
	awk = strings.Replace(awk, "/etc/systemd/system/", unitDir+"/", 1)
	if err := os.MkdirAll(filepath.Join(root, "usr", "lib", "systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr", "lib", "systemd")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	save := exec.Command("sh", "-c", awk)
	save.Stdin = strings.NewReader(res.stdout)
	if out, err := save.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", awk, err, out)
	}
	units, err := filepath.Glob(filepath.Join(unitDir, "trendfetch-*"))
	if err != nil || len(units) != 6 {
		t.Fatalf("the header's awk line saved %v, want 6 units", units)
	}
	var names []string
	for _, u := range units {
		names = append(names, filepath.Base(u))
		text, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(u, ".service") {
			checkSandboxedPaths(t, filepath.Base(u), string(text), root)
		}
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--root=" + root}, names...)...).CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	var regions []regionOut
	if err := json.Unmarshal([]byte(e.run("--config", cfg, "regions", "--json").stdout), &regions); err != nil {
		t.Fatal(err)
	}
	next := map[string]time.Time{}
	for _, r := range regions {
		if r.Configured {
			next[r.Code] = *r.NextRun
		}
	}
	region := ""
	for _, line := range strings.Split(res.stdout, "\n") {
		if r, ok := strings.CutPrefix(line, "# ---- trendfetch-"); ok {
			region = r[:2]
		}
		cal, ok := strings.CutPrefix(line, "OnCalendar=")
		if !ok {
			continue
		}
		out, err := exec.Command(analyze, "calendar", cal).CombinedOutput()
		if err != nil {
			t.Fatalf("systemd-analyze calendar %q: %v\n%s", cal, err, out)
		}
		_, after, _ := strings.Cut(string(out), "Next elapse: ")
		fields := strings.Fields(after) // Tue 2026-11-24 06:03:00 UTC
		if len(fields) < 4 {
			t.Fatalf("systemd-analyze output:\n%s", out)
		}
		got, err := time.Parse("2006-01-02 15:04:05 MST", strings.Join(fields[1:4], " "))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(next[region]) {
			t.Errorf("%s: OnCalendar=%s elapses at %s, the scheduler runs it at %s", region, cal, got.UTC(), next[region].UTC())
		}
		delete(next, region)
	}
	if len(next) != 0 {
		t.Errorf("no timer for %v", next)
	}

	// A database the sandbox lets it write stays where it is; a metrics
	// directory under /tmp has nowhere to go: exit 2 naming the setting.
	e.vars["TRENDFETCH_DATABASE"] = "/srv/trendfetch/tf.db"
	res = e.run("--config", cfg, "crontab", "--format", "systemd")
	if res.code != 0 || !strings.Contains(res.stdout, " --database /srv/trendfetch/tf.db run --region US\n") || !strings.Contains(res.stdout, "\nReadWritePaths=/srv/trendfetch\n") {
		t.Errorf("database in /srv: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	cfg = e.writeConfig("runs:\n  metrics_textfile: " + filepath.Join(e.dir, "prom") + "\n")
	if res = e.run("--config", cfg, "crontab", "--format", "systemd"); res.code != 2 || !strings.Contains(res.stderr, "runs.metrics_textfile "+filepath.Join(e.dir, "prom")+" is under /tmp") {
		t.Errorf("metrics_textfile under /tmp: exit %d, want 2 naming it\n%s", res.code, res.stderr)
	}
}

// checkSandboxedPaths checks every absolute path of a service's ExecStart=
// and Environment= against its own sandboxing options: none under a tree
// PrivateTmp= or ProtectHome= takes away, and the database (and the quota
// database) in a directory that ProtectSystem=strict leaves writable (the
// StateDirectory= or a ReadWritePaths=). The binary must exist under root.
func checkSandboxedPaths(t *testing.T, name, unit, root string) {
	t.Helper()
	opts := map[string][]string{}
	for _, line := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			opts[k] = append(opts[k], v)
		}
	}
	for k, want := range map[string]string{"ProtectSystem": "strict", "ProtectHome": "read-only", "PrivateTmp": "yes", "StateDirectory": "trendfetch", "User": "trendfetch"} {
		if got := opts[k]; len(got) != 1 || got[0] != want {
			t.Fatalf("%s: %s=%v, want %s", name, k, got, want)
		}
	}
	hidden := []string{"/tmp", "/var/tmp", "/home", "/root", "/run/user"} // PrivateTmp=yes, ProtectHome=read-only
	writable := append([]string{"/var/lib/" + opts["StateDirectory"][0]}, opts["ReadWritePaths"]...)
	within := func(p string, dirs []string) bool {
		for _, d := range dirs {
			if p == d || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	exec := strings.Fields(opts["ExecStart"][0])
	var paths []string
	for i, arg := range exec {
		if strings.HasPrefix(arg, "/") {
			paths = append(paths, arg)
		}
		if i > 0 && exec[i-1] == "--database" {
			if !within(filepath.Dir(arg), writable) {
				t.Errorf("%s: --database %s is not in a writable directory %v", name, arg, writable)
			}
		}
	}
	for _, kv := range opts["Environment"] {
		k, v, _ := strings.Cut(strings.Trim(kv, `"`), "=")
		if strings.HasPrefix(v, "/") {
			paths = append(paths, v)
		}
		if k == "TRENDFETCH_QUOTA_DB" && !within(filepath.Dir(v), writable) {
			t.Errorf("%s: %s is not in a writable directory %v", name, kv, writable)
		}
	}
	paths = append(paths, opts["ReadWritePaths"]...)
	for _, p := range paths {
		if within(p, hidden) {
			t.Errorf("%s uses %s, which its sandbox hides or keeps read-only", name, p)
		}
	}
	if len(exec) == 0 {
		t.Fatalf("%s: no ExecStart", name)
	}
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(exec[0])), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(binary, filepath.Join(root, exec[0])); err != nil && !os.IsExist(err) {
		data, rerr := os.ReadFile(binary)
		if rerr != nil || os.WriteFile(filepath.Join(root, exec[0]), data, 0o755) != nil {
			t.Fatal(err)
		}
	}
}

// TestShippedUnitUsesCredentialsAndNotify: configs/trendfetch.service takes
// the key from a systemd credential that trendfetch reads, not from the
// environment, and is Type=notify with a watchdog.
func TestShippedUnitUsesCredentialsAndNotify(t *testing.T) {
	raw, err := os.ReadFile("../../configs/trendfetch.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	for _, want := range []string{"\nType=notify\n", "\nWatchdogSec=", "\nLoadCredential=" + config.KeyCredentialPrefix + "default:", "AF_UNIX"} {
		if !strings.Contains(unit, want) {
			t.Errorf("configs/trendfetch.service lacks %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(unit, "\nEnvironmentFile=") {
		t.Errorf("configs/trendfetch.service still reads secrets from an EnvironmentFile")
	}
}
