package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// meteringEnv is a US chart on the emulator and an env whose quota backend
// is the Redis at redisURL.
func meteringEnv(t *testing.T, redisURL string) (*youtubetest.Server, string, *env) {
	t.Helper()
	emu := youtubetest.New()
	emu.SetChart("US", usChart(t))
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	// Long timeouts: these tests are about what Redis answers, and a reply
	// later than the default 300 ms (a loaded test machine) would be an
	// unreachable backend, under the call sites' policies.
	e.vars["TRENDFETCH_REDIS_URL"] = redisURL + "?dial_timeout=10s&read_timeout=10s&write_timeout=10s"
	return emu, url, e
}

// TestRedisAccessErrorsAreConfiguration: a Redis ACL user that may not run
// EVALSHA/EVAL, and a wrong password, are configuration errors: exit 2 with
// one line naming the user (and the refused command), never the password,
// and not one call is sent unmetered.
func TestRedisAccessErrorsAreConfiguration(t *testing.T) {
	const password = "Sup3rS3cretPW"
	srv := redistest.Start(t)
	srv.Do("ACL", "SETUSER", "tfrun", "on", ">"+password, "~*", "&*", "+@all", "-evalsha", "-eval")
	for _, tc := range []struct {
		name, url, want string
	}{
		{"no EVALSHA", "redis://tfrun:" + password + "@" + srv.Addr + "/0", `Redis user "tfrun" may not run EVALSHA`},
		{"wrong password", "redis://tfrun:wrong" + password + "@" + srv.Addr + "/0", `Redis refused user "tfrun"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu, url, e := meteringEnv(t, tc.url)
			res := e.run("--api-endpoint", url, "run", "--region", "US")
			if res.code != 2 || !strings.Contains(res.stderr, tc.want) {
				t.Fatalf("exit %d, want 2 naming the user: %q\n%s", res.code, tc.want, res.stderr)
			}
			if strings.Contains(res.stderr+res.stdout, password) {
				t.Errorf("the password reached the output:\n%s", res.stderr)
			}
			if n := emu.TotalCalls(); n != 0 {
				t.Errorf("%d API calls sent; want none (no unmetered calls)", n)
			}
			runs := newestRuns(t, e)
			for _, r := range runs {
				if r.Outcome == store.OutcomeSuccess || r.Unmetered > 0 {
					t.Errorf("run recorded as %+v", r)
				}
			}
		})
	}
}

// TestQuotaStatusAccessErrorIsConfiguration: `quota status` (and --json,
// and `quota check`) against a Redis that refuses trendfetch's user (no
// EVALSHA/EVAL, a wrong password) exits 2 with the one line naming the
// user, not 1 with UNREACHABLE; the password never reaches the output.
func TestQuotaStatusAccessErrorIsConfiguration(t *testing.T) {
	const password = "Sup3rS3cretPW"
	srv := redistest.Start(t)
	srv.Do("ACL", "SETUSER", "tfstat", "on", ">"+password, "~*", "&*", "+@all", "-evalsha", "-eval")
	for _, tc := range []struct {
		name, url, want string
	}{
		{"no EVALSHA", "redis://tfstat:" + password + "@" + srv.Addr + "/0", `Redis user "tfstat" may not run EVALSHA`},
		{"wrong password", "redis://tfstat:wrong" + password + "@" + srv.Addr + "/0", `Redis refused user "tfstat"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, e := meteringEnv(t, tc.url)
			for _, args := range [][]string{{"quota", "status"}, {"quota", "status", "--json"}, {"quota", "check", "--method", "videos.list"}} {
				res := e.run(args...)
				if res.code != 2 || !strings.Contains(res.stderr, tc.want) || strings.Contains(res.stdout+res.stderr, "UNREACHABLE") {
					t.Errorf("%v: exit %d, want 2 naming the user (%q), not UNREACHABLE\nstdout: %s\nstderr: %s", args, res.code, tc.want, res.stdout, res.stderr)
				}
				if strings.Contains(res.stdout+res.stderr, password) {
					t.Errorf("%v: the password reached the output", args)
				}
			}
		})
	}
}

// TestRedisOutOfMemoryFailsClosed: a Redis at maxmemory under noeviction
// refuses every write; every call site, fail-open ones included, fails
// closed (exit 75) with a reason that says so, and no call is sent.
func TestRedisOutOfMemoryFailsClosed(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "100kb", "--maxmemory-policy", "noeviction")
	emu, url, e := meteringEnv(t, srv.URL())
	res := e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 75 || !strings.Contains(res.stderr, "out of memory") {
		t.Fatalf("exit %d, want 75 with 'out of memory'\n%s", res.code, res.stderr)
	}
	if n := emu.TotalCalls(); n != 0 {
		t.Errorf("%d API calls sent unmetered; want none", n)
	}
	runs := newestRuns(t, e)
	if len(runs) != 1 || runs[0].Outcome != store.OutcomeDenied || !strings.Contains(runs[0].Reason, "out of memory") || runs[0].Unmetered != 0 {
		t.Fatalf("runs %+v: want one denied run whose reason says out of memory", runs)
	}
}

// TestUnmeteredRunIsNotPlainSuccess: a run whose calls went out fail-open
// (Redis down) is stored as success_unmetered (the runs table's own
// column, not a mapping on read) and reported so by `runs`, `runs --json`
// and the metrics textfile, never as plain success.
func TestUnmeteredRunIsNotPlainSuccess(t *testing.T) {
	srv := redistest.Start(t)
	_, url, e := meteringEnv(t, srv.URL())
	srv.Kill()
	dir := t.TempDir()
	res := e.run("--api-endpoint", url, "run", "--region", "US", "--metrics-textfile", dir)
	if res.code != 0 {
		t.Fatalf("fail-open run: exit %d\n%s", res.code, res.stderr)
	}
	db, err := sql.Open("sqlite", "file:"+e.dbPath()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored string
	if err := db.QueryRow(`SELECT group_concat(outcome) FROM runs`).Scan(&stored); err != nil || stored != "success_unmetered" {
		t.Errorf("runs.outcome column: %q, %v; want success_unmetered", stored, err)
	}
	prom := readTextfile(t, filepath.Join(dir, "trendfetch_US.prom"))
	for outcome, want := range map[string]float64{"success_unmetered": 1, "success": 0} {
		if v := metricValue(prom, "trendfetch_runs_total", map[string]string{"region": "US", "outcome": outcome}); v != want {
			t.Errorf("textfile runs_total{US,%s} = %v, want %v", outcome, v, want)
		}
	}
	runs := newestRuns(t, e)
	if len(runs) != 1 || runs[0].Outcome != store.OutcomeSuccessUnmetered || runs[0].Unmetered != 4 || !strings.Contains(runs[0].Reason, "unmetered") {
		t.Fatalf("runs %+v: want one success_unmetered run with 4 unmetered calls", runs)
	}
	for _, args := range [][]string{{"runs"}, {"runs", "--json"}} {
		out := e.run(args...)
		if out.code != 0 || !strings.Contains(out.stdout, "success_unmetered") {
			t.Errorf("%v: exit %d, want success_unmetered in\n%s", args, out.code, out.stdout)
		}
	}
}

// newestRuns returns the runs recorded in e's store, newest first (none
// when the store was never created).
func newestRuns(t *testing.T, e *env) []store.Run {
	t.Helper()
	if _, err := os.Stat(e.dbPath()); err != nil {
		return nil
	}
	runs, err := openStore(t, e.dbPath()).Runs(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
