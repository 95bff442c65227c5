package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestQuotaCheck: `quota check` answers whether N calls fit now (exit 0),
// when they will (exit 75, an exact time when the status knows it) or that
// they never can (exit 2), and reserves nothing.
func TestQuotaCheck(t *testing.T) {
	e := newEnv(t)
	res := e.run("quota", "check", "--method", "search.list", "--count", "3")
	if res.code != 0 || !strings.Contains(res.stdout, "3 search.list calls fit now") {
		t.Fatalf("empty quota: exit %d, want 0 and fit now\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res = e.run("quota", "charge", "--method", "search.list", "--count", "95"); res.code != 0 {
		t.Fatalf("charge: exit %d\n%s", res.code, res.stderr)
	}
	status := func() string {
		var st struct {
			Buckets []struct {
				Name string `json:"name"`
				Used int64  `json:"used"`
			} `json:"buckets"`
		}
		if err := json.Unmarshal([]byte(e.run("quota", "status", "--json").stdout), &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(st.Buckets)
	}
	before := status()
	res = e.run("quota", "check", "--method", "search.list", "--json")
	if res.code != 75 {
		t.Fatalf("search bucket full: exit %d, want 75\n%s%s", res.code, res.stdout, res.stderr)
	}
	var out engine.CheckResult
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Fits || out.FitsAt == nil || out.FitsBy == nil || !out.FitsAt.Equal(*out.FitsBy) {
		t.Errorf("check = %+v, want not fitting, at an exact time", out)
	} else if d := time.Until(*out.FitsAt); d < 23*time.Hour || d > 24*time.Hour+time.Minute {
		t.Errorf("fits at %s, want about 24h from now (the window)", out.FitsAt)
	}
	if after := status(); after != before {
		t.Errorf("quota check changed the status:\n%s\n%s", before, after)
	}
	if res = e.run("quota", "check", "--method", "videos.list", "--count", "99999"); res.code != 2 || !strings.Contains(res.stdout, "never fit") {
		t.Errorf("more than the limit: exit %d, want 2\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res = e.run("quota", "charge"); res.code != 2 {
		t.Errorf("quota charge without --method: exit %d, want 2\n%s", res.code, res.stderr)
	}
}

// readTextfile parses a metrics textfile.
func readTextfile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return mf
}

// TestRunWritesAMetricsTextfile: `run --metrics-textfile DIR` (and
// runs.metrics_textfile) leaves one file per region in DIR, mode 0644 and no
// temp file, with scheduler mode's names, counters carried across runs,
// build info, the last success and the renamed exhaustion gauge; each file
// holds its region's series only, and Debian's node_exporter reads the
// directory without an error and serves each region's values.
func TestRunWritesAMetricsTextfile(t *testing.T) {
	_, url, e := sampleEnv(t, "US", "GB")
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		if res := e.run("--api-endpoint", url, "run", "--region", "US", "--metrics-textfile", dir); res.code != 0 {
			t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
		}
	}
	cfg := e.writeConfig("regions: [GB]\nruns:\n  metrics_textfile: " + dir + "\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--all"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, de := range entries {
		names = append(names, de.Name())
		if fi, _ := de.Info(); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 (node_exporter reads it)", de.Name(), fi.Mode().Perm())
		}
	}
	if strings.Join(names, " ") != "trendfetch_GB.prom trendfetch_US.prom" {
		t.Fatalf("files %v, want one .prom file per region and no temp file", names)
	}
	var runs []store.Run // US's, newest first
	for _, r := range storedRuns(t, e.dbPath()) {
		if r.Region == "US" {
			runs = append(runs, r)
		}
	}
	us := readTextfile(t, filepath.Join(dir, "trendfetch_US.prom"))
	if v := metricValue(us, "trendfetch_runs_total", map[string]string{"region": "US", "outcome": "success"}); v != 2 {
		t.Errorf("runs_total{US,success} = %v, want 2 (carried over from the first run's file)", v)
	}
	spent := runs[0].Units["units"] + runs[1].Units["units"]
	if v := metricValue(us, "trendfetch_units_spent_total", map[string]string{"region": "US", "credential": "default", "bucket": "units"}); v != float64(spent) {
		t.Errorf("units_spent_total = %v, want %d", v, spent)
	}
	if v := metricValue(us, "trendfetch_unmetered_calls_total", map[string]string{"region": "US", "credential": "default"}); v != 0 {
		t.Errorf("unmetered_calls_total = %v, want a series at 0", v)
	}
	if v := metricValue(us, "trendfetch_build_info", map[string]string{"region": "US", "version": "dev", "goversion": runtime.Version()}); v != 1 {
		t.Errorf("build_info = %v, want 1 with version and goversion", v)
	}
	if v := metricValue(us, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"}); v < float64(runs[0].StartedAt.Unix()) {
		t.Errorf("last success %v, want the last run's time", v)
	}
	if us["trendfetch_quota_exhausted_until_timestamp_seconds"] == nil || us["trendfetch_quota_exhausted_until_seconds"] != nil {
		t.Errorf("want trendfetch_quota_exhausted_until_timestamp_seconds (renamed)")
	}
	gb := readTextfile(t, filepath.Join(dir, "trendfetch_GB.prom"))
	if v := metricValue(gb, "trendfetch_runs_total", map[string]string{"region": "GB", "outcome": "success"}); v != 1 {
		t.Errorf("GB runs_total = %v, want 1", v)
	}

	// Each file holds its region's series only: node_exporter refuses a
	// series found in two files (issue 31 item 13).
	for region, mf := range map[string]map[string]*dto.MetricFamily{"US": us, "GB": gb} {
		for name, f := range mf {
			for _, m := range f.GetMetric() {
				if got := labelValue(m, "region"); got != region {
					t.Errorf("trendfetch_%s.prom: %s%v has region %q", region, name, m.GetLabel(), got)
				}
			}
		}
	}
	var gbRun store.Run
	for _, r := range storedRuns(t, e.dbPath()) {
		if r.Region == "GB" {
			gbRun = r
		}
	}
	scraped := nodeExporterScrape(t, dir)
	for _, c := range []struct {
		region string
		runs   float64
		last   time.Time
	}{{"US", 2, runs[0].FinishedAt}, {"GB", 1, gbRun.FinishedAt}} {
		if v := metricValue(scraped, "trendfetch_runs_total", map[string]string{"region": c.region, "outcome": "success"}); v != c.runs {
			t.Errorf("node_exporter: runs_total{%s,success} = %v, want %v", c.region, v, c.runs)
		}
		if v := metricValue(scraped, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": c.region}); math.Abs(v-float64(c.last.UnixNano())/1e9) > 0.001 {
			t.Errorf("node_exporter: last_success{%s} = %v, want %v (its last run's end)", c.region, v, float64(c.last.UnixNano())/1e9)
		}
	}
}

// labelValue returns the value of m's label name ("" when it has none).
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestServeMetricsReadTheLastSuccessFromTheDatabase: serve's /metrics shows
// each region's last success from the database and the build info.
func TestServeMetricsReadTheLastSuccessFromTheDatabase(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	runs := storedRuns(t, e.dbPath())
	d := e.start("serve", "--addr", "127.0.0.1:0")
	mf := scrapeMetrics(t, d.serveAddr())
	got := metricValue(mf, "trendfetch_last_success_timestamp_seconds", map[string]string{"region": "US"})
	if want := float64(runs[0].FinishedAt.UnixNano()) / 1e9; math.Abs(got-want) > 0.001 {
		t.Errorf("serve: last success = %f, want the stored run's %f", got, want)
	}
	if v := metricValue(mf, "trendfetch_build_info", map[string]string{"version": "dev", "goversion": runtime.Version()}); v != 1 {
		t.Errorf("serve: build_info = %v, want 1", v)
	}
	d.stop(syscall.SIGTERM)
}

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

// TestAPIKeyFromASystemdCredential: with no key in the environment or a
// file, the key is read from $CREDENTIALS_DIRECTORY (LoadCredential=) and
// never printed.
func TestAPIKeyFromASystemdCredential(t *testing.T) {
	emu, url, e := sampleEnv(t, "US")
	delete(e.vars, "YOUTUBE_API_KEY")
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "youtube-api-key-default"), []byte("systemd-cred-key\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	e.vars["CREDENTIALS_DIRECTORY"] = creds
	e.vars["TRENDFETCH_LOG_LEVEL"] = "trace"
	res := e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || emu.Units("systemd-cred-key") == 0 {
		t.Fatalf("run: exit %d, emulator saw %d units with the credential's key\n%s", res.code, emu.Units("systemd-cred-key"), res.stderr)
	}
	if strings.Contains(res.stderr+res.stdout, "systemd-cred-key") {
		t.Errorf("the key reached the output:\n%s", res.stderr)
	}
	delete(e.vars, "CREDENTIALS_DIRECTORY")
	if res = e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 2 || !strings.Contains(res.stderr, "systemd credential youtube-api-key-default") {
		t.Errorf("no key anywhere: exit %d, want 2 naming the credential\n%s", res.code, res.stderr)
	}
}

// notifySocket listens on a real unixgram socket as systemd does and
// returns its path and the datagrams received so far.
func notifySocket(t *testing.T) (string, func() []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var (
		mu  sync.Mutex
		got []string
	)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, string(buf[:n]))
			mu.Unlock()
		}
	}()
	return path, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestScheduleAndServeNotifySystemd: under Type=notify with WatchdogSec,
// schedule and serve send READY=1, then WATCHDOG=1 pings, then STOPPING=1
// on SIGTERM, to $NOTIFY_SOCKET.
func TestScheduleAndServeNotifySystemd(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	cfg := e.writeConfig("regions: [US]\nschedule:\n  cron: \"0 0 1 1 *\"\n")
	for _, args := range [][]string{{"--config", cfg, "--api-endpoint", url, "schedule"}, {"serve", "--addr", "127.0.0.1:0"}} {
		t.Run(args[len(args)-1], func(t *testing.T) {
			sock, got := notifySocket(t)
			e.vars["NOTIFY_SOCKET"] = sock
			e.vars["WATCHDOG_USEC"] = "100000" // a ping every 50ms
			defer delete(e.vars, "NOTIFY_SOCKET")
			defer delete(e.vars, "WATCHDOG_USEC")
			d := e.start(args...)
			d.waitFor("READY=1 and two watchdog pings", func() bool {
				msgs := strings.Join(got(), "\n")
				return strings.HasPrefix(msgs, "READY=1") && strings.Count(msgs, "WATCHDOG=1") >= 2
			})
			if code := d.stop(syscall.SIGTERM); code != 0 {
				t.Errorf("exit %d after SIGTERM\n%s", code, d.stderr.String())
			}
			// The socket is read in the background: the last datagram may
			// be read a moment after the process exits.
			msgs := got()
			for deadline := time.Now().Add(2 * time.Second); (len(msgs) == 0 || msgs[len(msgs)-1] != "STOPPING=1") && time.Now().Before(deadline); msgs = got() {
				time.Sleep(10 * time.Millisecond)
			}
			if len(msgs) == 0 || msgs[len(msgs)-1] != "STOPPING=1" {
				t.Errorf("notifications %q, want STOPPING=1 last", msgs)
			}
		})
	}
}

// TestJSONLogsArePureJSON: with JSON logs, a denied run, a failed lookup and
// a configuration error each end in one JSON event with the exit code (and
// hint), never a plain "trendfetch: ..." line.
func TestJSONLogsArePureJSON(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	tiny := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 1, window: 1h}\n  costs:\n    videos.list: {units: 1}\n")
	e.run("--config", tiny, "--api-endpoint", url, "run", "--region", "US")
	uk := filepath.Join(e.dir, "uk.yaml")
	if err := os.WriteFile(uk, []byte("regions: [UK]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		hint string
	}{
		{[]string{"--config", tiny, "--api-endpoint", url, "run", "--region", "US"}, 75, ""},
		{[]string{"video", "nope0000000"}, exitcode.NotFound, ""},
		{[]string{"--config", uk, "run", "--all"}, 2, ""},
		{[]string{"chart", "--region", "XX"}, 2, "trendfetch regions"},
	} {
		res := e.run(tc.args...)
		if res.code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, res.code, tc.code, res.rawStderr)
		}
		lines := strings.Split(strings.TrimSpace(res.rawStderr), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Errorf("%v: a line that is not JSON: %q", tc.args, l)
			}
		}
		var last struct {
			Message  string `json:"message"`
			ExitCode int    `json:"exit_code"`
			Hint     string `json:"hint"`
		}
		json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		if last.Message != "trendfetch exits" || last.ExitCode != tc.code || last.Hint != tc.hint {
			t.Errorf("%v: last event %+v, want trendfetch exits with exit_code %d, hint %q", tc.args, last, tc.code, tc.hint)
		}
	}
}

// TestConsoleLogsHonourNO_COLOR: the console log format has colours on a
// terminal unless NO_COLOR is set, and none into a pipe.
func TestConsoleLogsHonourNO_COLOR(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	e.vars["TRENDFETCH_LOG_FORMAT"] = "console"
	onTTY := func() string { // the run's stderr as a terminal shows it
		ptmx, tty := openPTY(t)
		cmd := exec.Command(binary, "--api-endpoint", url, "run", "--region", "US")
		for k, v := range e.vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = tty
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shown := make(chan string)
		go func() {
			b, _ := io.ReadAll(ptmx) // ends with EIO once the terminal end closes
			shown <- string(b)
		}()
		if err := cmd.Wait(); err != nil {
			t.Errorf("run: %v", err)
		}
		tty.Close()
		return <-shown
	}
	if out := onTTY(); !strings.Contains(out, "\x1b[") || !strings.Contains(out, "run finished") {
		t.Fatalf("console logs on a terminal without NO_COLOR: want colours\n%q", out)
	}
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 || strings.Contains(res.stderr, "\x1b[") || !strings.Contains(res.stderr, "run finished") {
		t.Errorf("console logs into a pipe: exit %d, want no escapes\n%q", res.code, res.stderr)
	}
	e.vars["NO_COLOR"] = "1"
	if out := onTTY(); strings.Contains(out, "\x1b[") || !strings.Contains(out, "run finished") {
		t.Errorf("NO_COLOR=1 on a terminal: want console logs without escapes\n%q", out)
	}
}

// TestCompletionAndVersion: completion scripts for bash, zsh and fish;
// --version and version --json name the Go version and the pinned modules.
func TestCompletionAndVersion(t *testing.T) {
	e := newEnv(t)
	for shell, want := range map[string]string{"bash": "# bash completion V2 for trendfetch", "zsh": "#compdef trendfetch", "fish": "# fish completion for trendfetch"} {
		if res := e.run("completion", shell); res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Errorf("completion %s: exit %d, no %q", shell, res.code, want)
		}
	}
	res := e.run("--version")
	if res.code != 0 || !strings.Contains(res.stdout, runtime.Version()) || !strings.Contains(res.stdout, "google.golang.org/api v0.309.0") {
		t.Errorf("--version: exit %d\n%s", res.code, res.stdout)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(e.run("version", "--json").stdout), &v); err != nil || v.GoVersion != runtime.Version() || v.Modules["google.golang.org/api"] != "v0.309.0" || v.Modules["modernc.org/sqlite"] == "" {
		t.Errorf("version --json: %+v %v", v, err)
	}
}

// TestDurationsWithDays: 90d/1d work in the config, in flags and in
// crontab --every; prune --older-than 1m is refused as ambiguous.
func TestDurationsWithDays(t *testing.T) {
	e := newEnv(t)
	cfg := e.writeConfig("store:\n  retention: 90d\nstats:\n  track_for: 7d\nregions: [US, GB]\n")
	if res := e.run("--config", cfg, "crontab", "--every", "1d", "--stagger", "5m"); res.code != 0 || !strings.Contains(res.stdout, "\n5 0 * * *") {
		t.Errorf("crontab --every 1d: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := e.run("--config", cfg, "plan"); res.code != 0 {
		t.Errorf("plan with 90d and 7d: exit %d\n%s", res.code, res.stderr)
	}
	res := e.run("prune", "--older-than", "1m")
	if res.code != 2 || !strings.Contains(res.stderr, "minutes, not months") || !strings.Contains(res.stderr, "Try: trendfetch prune --older-than 90d") {
		t.Errorf("prune --older-than 1m: exit %d, want 2 with a hint\n%s", res.code, res.stderr)
	}
	if res := e.run("crontab", "--every", "2 days"); res.code != 2 || !strings.Contains(res.stderr, "90d") {
		t.Errorf("crontab --every '2 days': exit %d\n%s", res.code, res.stderr)
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
