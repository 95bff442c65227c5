package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/deploy"
)

// TestPostgresUnreachable: a run whose PostgreSQL store cannot be reached
// exits 1 before any reservation (no unit spent, none reserved), and the
// URL's password, given by flag or environment, appears in no output, nor
// in the job lines of crontab (docs/design.md §10a).
func TestPostgresUnreachable(t *testing.T) {
	emu, url, e := sampleEnv(t, "US")
	// quota status below reads the run's quota database (without the URL
	// it would read the one beside the default SQLite database).
	e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, "quota.db")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	const pw = "pg-s3cret-pw"
	db := "postgres://tf:" + pw + "@" + addr + "/trendfetch?sslmode=disable&connect_timeout=5"
	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			var global []string
			if how == "flag" {
				global = []string{"--database", db}
			} else {
				e.vars["TRENDFETCH_DATABASE"] = db
			}
			res := e.runBounded(60*time.Second, append(global, "--api-endpoint", url, "run", "--region", "US")...)
			assertNoPanic(t, res.stderr)
			if res.code != 1 || !strings.Contains(lastLine(res.stderr), "PostgreSQL") {
				t.Errorf("exit %d: want 1 and an error naming PostgreSQL\n%s", res.code, res.stderr)
			}
			if strings.Contains(res.stdout+res.rawStderr, pw) {
				t.Errorf("the password reached the output:\n%s%s", res.stdout, res.rawStderr)
			}
			if u := emu.Units("k"); u != 0 {
				t.Errorf("the API charged %d units", u)
			}
			// crontab writes the settings in force: never this password.
			res = e.run(append(global, "crontab")...)
			if res.code != 0 || strings.Contains(res.stdout+res.rawStderr, pw) || !strings.Contains(res.stdout, "store.url_file") {
				t.Errorf("crontab (exit %d) shows the password or no warning:\n%s%s", res.code, res.stdout, res.rawStderr)
			}
			delete(e.vars, "TRENDFETCH_DATABASE")
			if used := bucketUsed(quotaStatus(t, e), "units"); used != 0 {
				t.Errorf("quota used %d units, want 0 (no reservation)", used)
			}
		})
	}
}

// TestCrontabWithPostgres: with the URL in store.url_file, the crontab
// lines leave the database to the config (no --database, no warning, no
// password), as README.md's several-hosts section shows them; systemd units of a PostgreSQL dataset pass a password-less
// URL as it is and claim no database file (docs/design.md §10a).
func TestCrontabWithPostgres(t *testing.T) {
	e := newEnv(t)
	const pw = "pg-s3cret-pw"
	urlFile := filepath.Join(e.dir, "database-url")
	if err := os.WriteFile(urlFile, []byte("postgres://tf:"+pw+"@db.example:5432/trendfetch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := e.writeConfig("regions: [US, GB]\nstore:\n  url_file: " + urlFile + "\n")
	res := e.run("--config", cfg, "crontab")
	if res.code != 0 || strings.Contains(res.stdout+res.rawStderr, pw) || strings.Contains(res.stdout, "--database") ||
		strings.Contains(res.stdout, "WARNING") || !strings.Contains(res.stdout, " --config "+cfg+" run --region GB >>") {
		t.Errorf("crontab with store.url_file: exit %d\n%s%s", res.code, res.stdout, res.rawStderr)
	}
	var readme []string // the lines README.md's several-hosts section shows, as written here
	for _, line := range strings.Split(readmeSection(t, "Several hosts, one dataset"), "\n") {
		if regexp.MustCompile(`^\d`).MatchString(line) && strings.Contains(line, " run --region ") {
			line = strings.ReplaceAll(line, "/etc/trendfetch/trendfetch.yaml", cfg)
			readme = append(readme, strings.Replace(line, "/usr/local/bin/trendfetch", binary, 1))
		}
	}
	var lines []string
	for _, line := range strings.Split(res.stdout, "\n") {
		if strings.Contains(line, " run ") { // less the log format these tests set, README's host does not
			lines = append(lines, strings.Replace(line, "TRENDFETCH_LOG_FORMAT=json ", "", 1))
		}
	}
	if !slices.Equal(readme, lines) {
		t.Errorf("README.md shows the crontab lines\n%s\ncrontab writes\n%s", strings.Join(readme, "\n"), strings.Join(lines, "\n"))
	}
	const db = "postgres://tf@db.example:5432/trendfetch?sslmode=verify-full"
	res = e.run("--config", e.writeConfig("regions: [US]\n"), "--database", db, "crontab", "--format", "systemd")
	if res.code != 0 || !strings.Contains(res.stdout, " --database "+deploy.Quote(db)+" run --region US\n") ||
		strings.Contains(res.stdout, "ReadWritePaths") || !strings.Contains(res.stdout, "# The dataset is in PostgreSQL") {
		t.Errorf("crontab --format systemd --database %s: exit %d\n%s%s", db, res.code, res.stdout, res.rawStderr)
	}
}

// TestPostgresThatNeverAnswers (issue 39 item 5): at a PostgreSQL address that accepts
// connections and never answers, with the default bounds, `run` exits 1 within 30 s naming
// what it waited for, its check-in sent, and `runs` ends within 30 s likewise.
func TestPostgresThatNeverAnswers(t *testing.T) {
	skipIfShort(t, "waits the default bound, 20 s")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // open, never answered
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
	}()
	srv, got := pingRecorder(t, http.StatusOK)
	_, url, e := sampleEnv(t, "US")
	e.vars["TRENDFETCH_DATABASE"] = "postgres://tf@" + ln.Addr().String() + "/trendfetch"
	e.vars["TRENDFETCH_CHECKIN_URL"] = srv.URL + "/{region}"
	run, runs := e.spawn("--api-endpoint", url, "run", "--region", "US"), e.spawn("runs")
	for _, p := range []*proc{run, runs} {
		code := p.wait(t, 30*time.Second)
		if line := lastLine(humanErrors(p.stderr.String())); code != 1 || !strings.Contains(line, "no answer from PostgreSQL within 20s while connecting") {
			t.Errorf("%v: exit %d, want 1 within 30 s naming the wait:\n%s", p.cmd.Args[1:], code, line)
		}
	}
	if pings := got(); len(pings) != 2 || !strings.HasPrefix(pings[1], "POST /us/1 ") || !strings.Contains(pings[1], "no answer from PostgreSQL") {
		t.Errorf("check-ins %q, want /us/1 naming the wait", pings)
	}
}
