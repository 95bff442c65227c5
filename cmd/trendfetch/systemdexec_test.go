package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// TestSystemdUnitRunsAsGenerated: the generated trendfetch-US.service, run as systemd would
// run it (its ExecStart= argv after systemd's unquoting, as its User= or, with no such user
// here, nobody; only its Environment= and a $CREDENTIALS_DIRECTORY holding the files its
// LoadCredential= lines name), after the header's install steps, captures the chart with the
// key and sends its check-ins, with README's several-hosts configuration (the dataset in
// PostgreSQL, the quota in Redis): the key this environment gave reaches the unit as a
// credential, and the database, Redis and check-in URL files (root's, 0600, as README says)
// are made readable by the header's steps.
func TestSystemdUnitRunsAsGenerated(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("running a unit as its User= needs root in CI (CI=true)")
		}
		t.Skip("not root: cannot run the unit as its user")
	}
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	api := emu.StartTest(t)
	var pings atomic.Int32
	hc := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { pings.Add(1) }))
	defer hc.Close()

	// Paths the units' sandbox leaves where they are (not /tmp, not a home), readable by the user.
	dir, err := os.MkdirTemp("/var/lib", "tf-systemd-exec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	uid, gid := unitUser(t)
	bin, cfg := filepath.Join(dir, "trendfetch"), filepath.Join(dir, "trendfetch.yaml")
	copyFile(t, binary, bin, 0o755)
	// The URLs in files as README says: root's, mode 0600.
	rdb := redistest.Start(t)
	pgsrv, dbURL := pgDatabase(t)
	writeFiles(t, dir, map[string]string{"checkin-url": hc.URL + "/ping", "database-url": dbURL, "redis-url": rdb.URL()}, 0o600)
	config := "regions: [US]\nruns: {checkin_url_file: " + filepath.Join(dir, "checkin-url") + "}\n" +
		"store: {url_file: " + filepath.Join(dir, "database-url") + "}\n" +
		"quota: {backend: redis, redis: {url_file: " + filepath.Join(dir, "redis-url") + "}}\n"
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(bin, "--config", cfg, "--api-endpoint", api, "crontab", "--format", "systemd")
	gen.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "YOUTUBE_API_KEY=AIzaExecKey7f3q9"}
	out, err := gen.Output()
	if err != nil {
		t.Fatalf("crontab --format systemd: %v", err)
	}
	unit := unitOptions(t, string(out), "trendfetch-US.service")
	// The header's install steps for the files the service reads, for this user.
	for _, line := range strings.Split(string(out), "\n") {
		if step, ok := strings.CutPrefix(line, "#   chown "); ok {
			step = "chown " + strings.Replace(step, "trendfetch:", strconv.Itoa(uid)+":"+strconv.Itoa(gid), 1)
			if o, err := exec.Command("/bin/sh", "-c", step).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", step, err, o)
			}
		}
	}

	// $CREDENTIALS_DIRECTORY as systemd fills it: each LoadCredential=ID:PATH's file as ID.
	creds := filepath.Join(dir, "credentials")
	contents := map[string]string{"/etc/trendfetch/youtube-api-key": "AIzaExecKey7f3q9\n"}
	if err := os.Mkdir(creds, 0o500); err != nil || os.Chown(creds, uid, gid) != nil {
		t.Fatal(err)
	}
	for _, lc := range unit["LoadCredential"] {
		id, path, _ := strings.Cut(strings.ReplaceAll(lc, "%%", "%"), ":")
		if err := os.WriteFile(filepath.Join(creds, id), []byte(contents[path]), 0o400); err != nil || os.Chown(filepath.Join(creds, id), uid, gid) != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "CREDENTIALS_DIRECTORY=" + creds, "HOME=/"}
	for _, e := range unit["Environment"] {
		env = append(env, unquoteSystemd(t, e)...)
	}
	argv := unquoteSystemd(t, unit["ExecStart"][0])
	run := exec.Command(argv[0], argv[1:]...)
	run.Env, run.Dir = env, "/"
	run.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if o, err := run.CombinedOutput(); err != nil {
		t.Fatalf("%q as uid %d: %v\n%s\n%s", argv, uid, err, o, out)
	}
	captures, err := pgsrv.Psql(dbURL, "-tAc", "SELECT count(*) FROM captures WHERE region = 'US'")
	if emu.Units("AIzaExecKey7f3q9") == 0 || pings.Load() < 2 || strings.TrimSpace(captures) != "1" || rdb.Do("DBSIZE") == "0" {
		t.Errorf("units spent with the credential's key %d, check-ins %d, captures %q (%v), Redis keys %s",
			emu.Units("AIzaExecKey7f3q9"), pings.Load(), captures, err, rdb.Do("DBSIZE"))
	}
}

// unitUser is the uid and gid of the units' User= (trendfetch), or nobody's where it does not exist.
func unitUser(t *testing.T) (int, int) {
	u, err := user.Lookup("trendfetch")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, data, mode)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// unitOptions is the Key=Value lines of unit name in the generated output.
func unitOptions(t *testing.T, out, name string) map[string][]string {
	t.Helper()
	_, text, ok := strings.Cut(out, "# ---- "+name+" ----\n")
	if !ok {
		t.Fatalf("no %s in:\n%s", name, out)
	}
	text, _, _ = strings.Cut(text, "\n# ---- ")
	opts := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			opts[k] = append(opts[k], v)
		}
	}
	return opts
}

// unquoteSystemd splits a command line or Environment= value as systemd does for what the
// units hold: "%%" is "%", "$$" is "$", words split at spaces, "..." quoting with \ escapes.
func unquoteSystemd(t *testing.T, s string) []string {
	t.Helper()
	s = strings.NewReplacer("%%", "%", "$$", "$").Replace(s)
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted, inWord = !quoted, true
		case c == '\\' && quoted && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		case c == ' ' && !quoted:
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
