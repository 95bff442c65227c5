package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// TestCrontabRefusesValuesThatBreakALine (issue 31 item 11): a value
// holding a newline or another control character would end the crontab
// line (or the unit's) and start a line of its own: refused with exit 2
// naming the setting, nothing printed.
func TestCrontabRefusesValuesThatBreakALine(t *testing.T) {
	const injected = "/tmp/x.db\n* * * * * touch /tmp/pwned #"
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"flag", []string{"--database", injected, "crontab"}, nil, "database (--database, TRENDFETCH_DATABASE) = /tmp/x.db\\n* * * * * touch"},
		{"env without a flag", []string{"crontab"}, map[string]string{"TRENDFETCH_QUOTA_DB": "/tmp/q\r.db"}, "quota.sqlite.path (TRENDFETCH_QUOTA_DB) = /tmp/q\\r.db"},
		{"log dir", []string{"crontab", "--log-dir", "/var/log/\ntf"}, nil, "schedule.log_dir (--log-dir)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newInproc(t, "", tc.env)
			err := p.execute(tc.args...)
			if exit(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) || strings.Contains(p.out.String(), "touch") {
				t.Errorf("%v (exit %d), want 2 naming %q\nstdout:\n%s", err, exit(err), tc.want, p.out.String())
			}
		})
	}
}

// TestUnknownFlagSuggestsTheClosest (issue 31 item 17): `--regions` gets
// "did you mean --region?", a root flag's typo its root flag.
func TestUnknownFlagSuggestsTheClosest(t *testing.T) {
	p := newInproc(t, "", nil)
	for args, want := range map[string]string{
		"run --regions US":      "unknown flag: --regions: did you mean --region?",
		"runs --databse /tmp/x": "did you mean --database?",
		"run --zzzzzzzzzzzz US": "unknown flag: --zzzzzzzzzzzz",
	} {
		if err := p.execute(strings.Fields(args)...); exit(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (exit %d), want 2 with %q", args, err, exit(err), want)
		}
	}
}

// TestDatabaseFlagWinsOverURLFile (issue 39 item 1): with store.url_file naming a PostgreSQL
// server, --database and TRENDFETCH_DATABASE reach the database they name: `run` captures
// into it, and `crontab` writes it for its jobs.
func TestDatabaseFlagWinsOverURLFile(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	urlFile := filepath.Join(e.dir, "database-url")
	if err := os.WriteFile(urlFile, []byte("postgres://tf@127.0.0.1:1/other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := e.writeConfig("store:\n  url_file: " + urlFile + "\n")
	for _, how := range []string{"flag", "env"} {
		db := filepath.Join(e.dir, how+".db")
		global := []string{"--config", cfg, "--database", db}
		if how == "env" {
			global, e.vars["TRENDFETCH_DATABASE"] = global[:2], db
		}
		res := e.run(append(global, "--api-endpoint", url, "run", "--region", "US")...)
		if _, err := os.Stat(db); res.code != 0 || err != nil {
			t.Errorf("run with the database by %s: exit %d, %v, want a capture in %s\n%s", how, res.code, err, db, res.stderr)
		}
		if res = e.run(append(global, "crontab")...); res.code != 0 || !strings.Contains(res.stdout, "--database "+db) {
			t.Errorf("crontab with the database by %s: exit %d, want jobs given --database %s\n%s%s", how, res.code, db, res.stdout, res.stderr)
		}
	}
}
