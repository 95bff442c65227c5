package main

// The README's several-hosts walkthrough, run command by command (issue 39
// item 9): its ```console blocks in order, each command on the hosts named
// by the line "On `HOST` and `HOST`:" just before its block (none: the
// test's own host, as the PostgreSQL superuser's step is), each host a UTS
// namespace of its own (its host name) with its own directories.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/pgtest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// walkCommand is one `$ ` command of a README block (a heredoc included)
// and the output the README shows after it (none: not compared).
type walkCommand struct {
	text string
	want []string
}

// walkBlock is a ```console block of the walkthrough and the hosts it runs on.
type walkBlock struct {
	hosts []string
	cmds  []walkCommand
}

// walkthrough parses the README's several-hosts section: its console blocks
// in order, and the rows of its check-in table (ping, body).
func walkthrough(t *testing.T) (blocks []walkBlock, checkins [][2]string) {
	t.Helper()
	span := regexp.MustCompile("`([^`]+)`")
	var on []string // hosts of the next block
	lines := strings.Split(readmeSection(t, "Several hosts, one dataset"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "On ") && strings.HasSuffix(line, ":"):
			on = nil
			for _, m := range span.FindAllStringSubmatch(line, -1) {
				on = append(on, m[1])
			}
		case line == "```console":
			b := walkBlock{hosts: on}
			for i++; lines[i] != "```"; i++ {
				switch l := lines[i]; {
				case strings.HasPrefix(l, "$ "):
					cmd := strings.TrimPrefix(l, "$ ")
					if m := regexp.MustCompile(`<<'(\w+)'`).FindStringSubmatch(cmd); m != nil {
						for i++; lines[i] != m[1]; i++ {
							cmd += "\n" + lines[i]
						}
						cmd += "\n" + m[1]
					}
					b.cmds = append(b.cmds, walkCommand{text: cmd})
				case len(b.cmds) > 0:
					b.cmds[len(b.cmds)-1].want = append(b.cmds[len(b.cmds)-1].want, l)
				}
			}
			blocks, on = append(blocks, b), nil
		case strings.HasPrefix(line, "| `/"):
			cells := strings.Split(line, "|")
			checkins = append(checkins, [2]string{strings.Trim(cells[1], "` "), strings.Trim(cells[2], "` ")})
		case line != "":
			on = nil
		}
	}
	return blocks, checkins
}

// matchOutput reports whether got (lines) is what want shows: line by line,
// runs of spaces alike, "…" in a line standing for any text and a line of
// "…" alone for any lines.
func matchOutput(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "…" {
		for i := 0; i <= len(got); i++ {
			if matchOutput(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchLine(want[0], got[0]) && matchOutput(want[1:], got[1:])
}

func matchLine(want, got string) bool {
	parts := strings.Split(strings.Join(strings.Fields(want), " "), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(strings.Join(strings.Fields(got), " "))
}

// walkHosts is the walkthrough's machines: each host's directories, the
// substitutions of the README's names by the test's, the jobs' environment.
type walkHosts struct {
	t         *testing.T
	root      string
	subs      []string // README text, test text, ...: every host's
	env       []string
	bg        []chan error // the background commands' Wait
	bgPids    []int
	serveAddr string
}

// hostSubs are the substitutions on host, README text then the test's:
// its directories stand for /etc/trendfetch, /var/log/trendfetch and
// /var/lib/trendfetch, and a file for root's crontab (the test, not cron,
// runs its lines); then every host's (w.subs).
func (w *walkHosts) hostSubs(host string) []string {
	dir := filepath.Join(w.root, cmpOr(host, "admin"))
	return append([]string{
		"/etc/trendfetch", filepath.Join(dir, "conf"),
		"/var/log/trendfetch", filepath.Join(dir, "log"),
		"/var/lib/trendfetch", filepath.Join(dir, "lib"),
		"crontab -l", "cat " + filepath.Join(dir, "crontab.spool"),
		"| crontab -", ">" + filepath.Join(dir, "crontab.spool"),
	}, w.subs...)
}

// toTest replaces the README's names on host by the test's; toREADME
// puts them back (in output).
func (w *walkHosts) toTest(host string) *strings.Replacer {
	return strings.NewReplacer(w.hostSubs(host)...)
}

func (w *walkHosts) toREADME(host string) *strings.Replacer {
	subs := w.hostSubs(host)
	for i := 0; i < len(subs); i += 2 {
		subs[i], subs[i+1] = subs[i+1], subs[i]
	}
	return strings.NewReplacer(subs...)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// command is sh -ec text on host (its own UTS namespace and host name; ""
// = the test's host) in w's environment plus extra.
func (w *walkHosts) command(host, text string, extra ...string) *exec.Cmd {
	cmd := exec.Command("sh", "-ec", text)
	if host != "" {
		cmd = exec.Command("unshare", "--uts", "--", "sh", "-c", `hostname "$0" && exec sh -ec "$1"`, host, text)
	}
	cmd.Env = append(slices.Clone(w.env), "HOME="+filepath.Join(w.root, cmpOr(host, "admin"), "home"))
	cmd.Env = append(cmd.Env, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run runs c on host, substituted, and compares its output with the
// README's; a command ending in " &" (serve) starts in the background and
// the test waits until the web node is ready (waitListening).
func (w *walkHosts) run(host string, c walkCommand) {
	t := w.t
	t.Helper()
	text := w.toTest(host).Replace(c.text)
	if bg, ok := strings.CutSuffix(text, " &"); ok {
		cmd := w.command(host, bg)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.bgPids = append(w.bgPids, cmd.Process.Pid)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		w.bg = append(w.bg, exited)
		if err := waitListening(w.serveAddr, exited); err != nil {
			t.Fatalf("README, on %s: %s: %v\n%s", host, c.text, err, log.String())
		}
		return
	}
	var stdout, stderr bytes.Buffer
	cmd := w.command(host, text)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("README, on %s: %s\n%v\n%s%s", cmpOr(host, "the admin host"), c.text, err, stdout.String(), stderr.String())
	}
	got := strings.Split(w.toREADME(host).Replace(strings.TrimSuffix(stdout.String(), "\n")), "\n")
	if len(c.want) > 0 && !matchOutput(c.want, got) {
		t.Errorf("README, on %s: %s\nshows\n%s\nthe command printed (the test's names put back)\n%s", host, c.text, strings.Join(c.want, "\n"), strings.Join(got, "\n"))
	}
}

// stop ends the background commands (serve): SIGTERM to each one's
// process group.
func (w *walkHosts) stop() {
	for i, pid := range w.bgPids {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		<-w.bg[i]
		w.bg[i] <- nil // for a second stop
	}
}

// waitListening waits until serve at addr is ready (its /healthz answers
// 200: listening, its database open), at most 20 s, or returns the error of
// the command that exited meanwhile.
func waitListening(addr string, exited chan error) error {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("exited (%v) before listening on %s", err, addr)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("no 200 from http://%s/healthz after 20s", addr)
}

// requireTools skips t, or fails it under CI=true, without a command the
// walkthrough uses (.ci/run installs jq and curl; psql comes with
// PostgreSQL).
func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI: %v", n, err)
			}
			t.Skipf("%s is not installed: %v", n, err)
		}
	}
}

// checkins records the pings of the monitor stand-in, in arrival order.
type checkins struct {
	mu    sync.Mutex
	pings []string // "PATH BODY"
}

func (c *checkins) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.pings = append(c.pings, r.URL.Path+" "+string(body))
	c.mu.Unlock()
}

// of returns the pings of check (its path), as "/SUFFIX BODY".
func (c *checkins) of(check string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.pings {
		if rest, ok := strings.CutPrefix(p, check+"/"); ok {
			out = append(out, "/"+rest)
		}
	}
	return out
}

// holdFirst makes the first videos.list request of a region (set by
// hold) wait a second and a half, and signals it: the first host fetches,
// holding the region's lease, while the second host fires.
type holdFirst struct {
	mu     sync.Mutex
	region string
	held   chan struct{}
}

func (h *holdFirst) hold(region string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.region, h.held = region, make(chan struct{})
	return h.held
}

func (h *holdFirst) hook(_ http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	first := r.URL.Query().Get("regionCode") == h.region && h.held != nil
	if first {
		close(h.held)
		h.held = nil
	}
	h.mu.Unlock()
	if first {
		time.Sleep(1500 * time.Millisecond)
	}
	return false
}

// fire is cron at the tick: each host's installed crontab line of region
// runs on it, first's a moment before second's (once first fetches).
func (w *walkHosts) fire(h *holdFirst, api, region, first, second string) {
	t := w.t
	t.Helper()
	held := h.hold(region)
	var wg sync.WaitGroup
	start := func(host string) {
		spool, err := os.ReadFile(filepath.Join(w.root, host, "crontab.spool"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^(?:\S+\s+){5}(.* run --region ` + region + ` .*)$`).FindStringSubmatch(string(spool))
		if m == nil {
			t.Fatalf("%s's crontab has no line for %s:\n%s", host, region, spool)
		}
		cmd := w.command(host, w.toTest(host).Replace(m[1]), "TRENDFETCH_API_ENDPOINT="+api)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = cmd.Wait() }() // the README shows its log and check-ins
	}
	start(first)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s's run of %s fetched nothing within 30s", first, region)
	}
	start(second)
	wg.Wait()
}

// TestREADMEWalkthrough: README's "Several hosts, one dataset", run as
// written against a PostgreSQL server of its own (its superuser stands for
// postgres), a redis-server with a password, the API emulator and a
// check-in monitor, on hosts fetch-a, fetch-b and web-1. The test stands
// for what the README leaves to the machines: fetch-a's SQLite dataset of
// JP (a run before the walkthrough), and cron: after the crontab block it
// runs each host's installed US line, fetch-a first, then the GB lines,
// fetch-b first. Every command must exit 0 and print what the README
// shows; the check `trendfetch-us` must receive the README's pings.
func TestREADMEWalkthrough(t *testing.T) {
	skipIfShort(t, "starts PostgreSQL, redis-server, serve and a dozen trendfetch processes")
	requireHosts(t)
	requireTools(t, "jq", "curl", "psql")
	blocks, table := walkthrough(t)
	if len(blocks) < 7 || len(table) < 2 {
		t.Fatalf("README's walkthrough: %d console blocks, %d check-in rows; want 7 steps", len(blocks), len(table))
	}
	srv, err := pgtest.StartWith(pgtest.Options{}) // its own: roles are the cluster's
	srv = pgtest.Require(t, srv, err)
	t.Cleanup(srv.Stop)
	port := strings.TrimPrefix(regexp.MustCompile(`:\d+/`).FindString(srv.URL("postgres")), ":")
	port = strings.TrimSuffix(port, "/")
	rdb := redistest.Start(t, "--requirepass", "redis-secret")
	emu := youtubetest.New()
	for _, r := range []string{"US", "GB", "JP"} {
		emu.SetChart(r, youtubetest.Sample())
	}
	var hold holdFirst
	emu.SetHook(hold.hook)
	api := emu.StartTest(t)
	var pings checkins
	monitor := httptest.NewServer(&pings)
	t.Cleanup(monitor.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0") // the web node's port
	if err != nil {
		t.Fatal(err)
	}
	serveAddr := l.Addr().String()
	l.Close()

	w := &walkHosts{t: t, root: t.TempDir(), serveAddr: serveAddr, env: []string{
		"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}, subs: []string{ // the README's names for the test's servers
		"-h db.internal -U postgres", "-h 127.0.0.1 -p " + port + " -U trendfetch",
		"db.internal:5432", "127.0.0.1:" + port,
		"sslmode=verify-full", "sslmode=disable",
		"redis.internal:6379", rdb.Addr,
		"https://hc-ping.com", monitor.URL,
		"0.0.0.0:8080", serveAddr,
		"localhost:8080", serveAddr,
		"/usr/local/bin/trendfetch", binary,
	}}
	t.Cleanup(w.stop)
	for _, h := range []string{"admin", "fetch-a", "fetch-b", "web-1"} {
		if err := os.MkdirAll(filepath.Join(w.root, h, "home"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// fetch-a's dataset from before: JP, in SQLite.
	existing := w.command("fetch-a", binary+" --database "+filepath.Join(w.root, "fetch-a", "lib", "trendfetch.db")+" run --region JP",
		"YOUTUBE_API_KEY=k", "TRENDFETCH_API_ENDPOINT="+api)
	if out, err := existing.CombinedOutput(); err != nil {
		t.Fatalf("fetch-a's JP run into SQLite: %v\n%s", err, out)
	}

	time.Sleep(clearOfSlotEdges(time.Now()))
	for _, b := range blocks {
		for _, host := range cmpHosts(b.hosts) {
			for _, c := range b.cmds {
				w.run(host, c)
			}
		}
		if slices.ContainsFunc(b.cmds, func(c walkCommand) bool { return strings.Contains(c.text, "| crontab -") }) {
			w.fire(&hold, api, "US", "fetch-a", "fetch-b")
			w.fire(&hold, api, "GB", "fetch-b", "fetch-a")
		}
		if t.Failed() {
			return
		}
	}
	assertCheckins(t, table, pings.of("/PING_KEY/trendfetch-us"))
}

// clearOfSlotEdges is how long to wait for the walkthrough's ticks and
// its `coverage --since 2h` to fall in one slot of each region (every 2h
// from 00:00 UTC, GB 3 minutes after US): past an edge less than 30 s away.
func clearOfSlotEdges(now time.Time) time.Duration {
	for _, off := range []time.Duration{0, 3 * time.Minute, 2 * time.Hour} {
		if d := now.Truncate(2 * time.Hour).Add(off).Sub(now); d > 0 && d < 30*time.Second {
			return d + time.Second
		}
	}
	return 0
}

// cmpHosts is hosts, or the test's own host ("") when none is named.
func cmpHosts(hosts []string) []string {
	if len(hosts) == 0 {
		return []string{""}
	}
	return hosts
}

// assertCheckins: the pings match the README's rows (ping, body; "…" any
// text), in any order (two hosts ping at once).
func assertCheckins(t *testing.T, rows [][2]string, pings []string) {
	t.Helper()
	left := slices.Clone(pings)
	for _, r := range rows {
		want := strings.TrimSpace(r[0] + " " + r[1])
		i := slices.IndexFunc(left, func(p string) bool { return matchLine(want, p) })
		if i < 0 {
			t.Errorf("README: the check receives %q; it received\n%s", want, strings.Join(pings, "\n"))
			return
		}
		left = slices.Delete(left, i, i+1)
	}
	if len(left) > 0 {
		t.Errorf("the check received pings the README does not show: %q", left)
	}
}
