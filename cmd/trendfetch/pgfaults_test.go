package main

// Process-level tests of the PostgreSQL store's faults and secrets (issue
// 30 item 6, docs/design.md §10a): malformed URLs, TLS settings, a server
// lost mid-run, the password masked everywhere.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/parquet-go/parquet-go"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestPostgresMalformedURL: a PostgreSQL URL that cannot be used as
// written (bad port, unknown sslmode, bad %-escape, an sslrootcert that
// cannot be read) is a configuration error: exit 2 before any reservation,
// one line naming the setting that gave it and how to write it, never the
// password.
func TestPostgresMalformedURL(t *testing.T) {
	emu, url, e := sampleEnv(t, "US")
	const pw = "pg-s3cret-pw"
	missing := filepath.Join(e.dir, "no-such-ca.pem")
	e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, "quota.db") // whatever the database
	cases := []struct{ name, db, want string }{
		{"port", "postgres://tf:" + pw + "@127.0.0.1:99999/trendfetch", "invalid port"},
		{"sslmode", "postgres://tf:" + pw + "@127.0.0.1:5432/trendfetch?sslmode=sometimes", "sslmode is invalid"},
		{"escape", "postgres://tf:" + pw + "%ZZ@127.0.0.1:5432/trendfetch", "invalid percent-encoded token in password"},
		{"sslrootcert", "postgres://tf:" + pw + "@127.0.0.1:5432/trendfetch?sslmode=verify-full&sslrootcert=" + missing, "unable to read CA file"},
		{"timeout", "postgresql://tf@127.0.0.1/trendfetch?password=" + pw + "&connect_timeout=soon", "invalid connect_timeout"},
	}
	urlFile := filepath.Join(e.dir, "pg-url")
	fileCfg := e.writeConfig("store:\n  url_file: " + urlFile + "\n")
	for _, c := range cases {
		for _, how := range []string{"flag", "env", "url_file"} {
			var global []string
			setting := "database (--database, TRENDFETCH_DATABASE): "
			switch how {
			case "flag":
				global = []string{"--database", c.db}
			case "env":
				e.vars["TRENDFETCH_DATABASE"] = c.db
			case "url_file":
				if err := os.WriteFile(urlFile, []byte(c.db+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				global = []string{"--config", fileCfg}
				setting = "store.url_file " + urlFile + ": "
			}
			for _, args := range [][]string{{"--api-endpoint", url, "run", "--region", "US"}, {"search", "x"}, {"serve", "--addr", "127.0.0.1:0"}} {
				res := e.runBounded(60*time.Second, append(global, args...)...)
				assertNoPanic(t, res.stderr)
				line := lastLine(res.stderr)
				if res.code != 2 || !strings.HasPrefix(line, "trendfetch: "+setting+"the PostgreSQL URL cannot be used: ") ||
					!strings.Contains(line, c.want) || !strings.Contains(line, "fix it as postgres://") {
					t.Errorf("%s by %s, %s: exit %d, want 2 and one line naming %q and %q\n%s", c.name, how, args[len(args)-2], res.code, setting, c.want, res.stderr)
				}
				if strings.Contains(res.rawStderr, pw) {
					t.Errorf("%s by %s: the password reached the output:\n%s", c.name, how, res.rawStderr)
				}
			}
			delete(e.vars, "TRENDFETCH_DATABASE")
		}
	}
	if u := emu.Units("k"); u != 0 {
		t.Errorf("the API charged %d units", u)
	}
	if used := bucketUsed(quotaStatus(t, e), "units"); used != 0 {
		t.Errorf("quota used %d units, want 0 (no reservation)", used)
	}
}

// pgProxy forwards loopback TCP connections to a PostgreSQL server until
// cut: then every connection it carried is closed and new ones are
// refused, as when the server's host goes away.
type pgProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	gone   bool
}

// proxied starts a proxy to the server of db and returns it and db's URL
// through it.
func proxied(t *testing.T, db string) (*pgProxy, string) {
	t.Helper()
	u, err := neturl.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{l: l, target: u.Host}
	t.Cleanup(p.cut)
	go p.serve()
	u.Host = l.Addr().String()
	return p, u.String()
}

func (p *pgProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.gone {
			c.Close()
			up.Close()
		} else {
			p.conns = append(p.conns, c, up)
		}
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }() //nolint:errcheck
		go func() { io.Copy(c, up); c.Close() }()  //nolint:errcheck
	}
}

// cut closes every connection and refuses new ones.
func (p *pgProxy) cut() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone = true
	for _, c := range p.conns {
		c.Close()
	}
}

// TestPostgresLostMidRun: PostgreSQL goes away (every connection cut,
// new ones refused) while the third of four chart pages is answered. The
// run stops with exit 1 and one error naming PostgreSQL and the units
// spent and not stored (that page's 1 unit); the two pages stored before
// are intact; the run record shows the 3 units the quota counts, and the
// region's next run, with PostgreSQL back, stores the whole chart and
// marks the lost run abandoned (docs/design.md §10a).
func TestPostgresLostMidRun(t *testing.T) {
	_, db := pgDatabase(t)
	proxy, viaProxy := proxied(t, db)
	emu := youtubetest.New()
	emu.SetChart("US", usChart(t))
	var pages atomic.Int32
	emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("chart") != "" && pages.Add(1) == 3 {
			proxy.cut()
		}
		return false
	})
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, "quota.db")

	res := e.runBounded(60*time.Second, "--database", viaProxy, "--api-endpoint", url, "run", "--region", "US")
	assertNoPanic(t, res.stderr)
	line := lastLine(res.stderr)
	if res.code != 1 || !strings.HasPrefix(line, "trendfetch: PostgreSQL lost mid-run: 1 unit spent, not stored; region US: cannot store page 3 of the US chart: ") ||
		!strings.HasSuffix(line, "the run record stays running until the region's next run marks it abandoned") {
		t.Fatalf("exit %d: want 1 and the units not stored\n%s", res.code, res.stderr)
	}
	if u := emu.Units("k"); u != 3 {
		t.Errorf("the API charged %d units, want 3 (3 pages)", u)
	}
	if used := bucketUsed(quotaStatus(t, e), "units"); used != 3 {
		t.Errorf("quota used %d units, want 3", used)
	}
	runs, chart := pgRuns(t, db)
	if len(runs) != 1 || runs[0].Outcome != store.OutcomeRunning || runs[0].Units["units"] != 3 || runs[0].Pages != 2 || runs[0].Videos != 100 {
		t.Fatalf("after the loss: runs %+v, want one running with 3 units, 2 pages, 100 videos", runs)
	}
	if c := chart[runs[0].ID]; c != (chartRow{rows: 100, minRank: 1, maxRank: 100}) {
		t.Errorf("stored before the loss: %+v, want ranks 1-100", c)
	}

	res = e.runBounded(60*time.Second, "--database", db, "--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 {
		t.Fatalf("the next run: exit %d\n%s", res.code, res.stderr)
	}
	runs, chart = pgRuns(t, db)
	if len(runs) != 2 || runs[0].Outcome != store.OutcomeSuccess || runs[1].Outcome != store.OutcomeAbandoned ||
		chart[runs[0].ID] != (chartRow{rows: 200, minRank: 1, maxRank: 200}) || chart[runs[1].ID].rows != 100 {
		t.Errorf("after the next run: runs %+v, chart rows %+v", runs, chart)
	}
}

// pgRuns returns the runs of the PostgreSQL database db, newest first, and
// each run's chart rows.
func pgRuns(t *testing.T, db string) ([]store.Run, map[int64]chartRow) {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return runs, chartRows(t, st)
}

// readmeStatements returns the SQL statements of the README's psql
// heredoc that follow its `\c trendfetch` (the GRANTs), split at ";".
func readmeStatements(t *testing.T) []string {
	t.Helper()
	_, block, ok := strings.Cut(readmeSection(t, "Several hosts, one dataset"), "\n\\c trendfetch\n")
	if !ok {
		t.Fatal("README.md's several-hosts section has no psql heredoc with \\c trendfetch")
	}
	block, _, _ = strings.Cut(block, "\nSQL\n")
	var out []string
	for _, s := range strings.Split(block, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestServeAsReadOnlyRole: the README's GRANTs, run as written (the
// database's name aside) on a dataset that `run` filled, give a role that
// `serve` works with: it starts (no migration attempted), answers the
// chart, search, video, runs and dashboard endpoints as the owner's
// `serve` does, logs no error, and shows the role's password nowhere. The
// role also reads a table created after the GRANTs (a later migration's).
func TestServeAsReadOnlyRole(t *testing.T) {
	srv, db := pgDatabase(t)
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--database", db, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	u, err := neturl.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	ctx := context.Background()
	owner, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	stmts := readmeStatements(t)
	if len(stmts) == 0 || !strings.HasPrefix(stmts[0], "GRANT ") {
		t.Fatalf("README's statements: %q", stmts)
	}
	if _, err := owner.Exec(ctx, "CREATE ROLE trendfetch_web LOGIN PASSWORD 'web-secret'"); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts { // the role that runs `run` here is trendfetch
		s = strings.Replace(s, "FOR ROLE trendfetch_fetch ", "FOR ROLE trendfetch ", 1)
		if _, err := owner.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		owner, err := pgx.Connect(ctx, srv.URL("postgres"))
		if err == nil {
			owner.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)") //nolint:errcheck
			owner.Exec(ctx, "DROP ROLE trendfetch_web")            //nolint:errcheck
			owner.Close(ctx)
		}
	})
	reader := *u
	reader.User = neturl.UserPassword("trendfetch_web", "web-secret")
	if _, err := owner.Exec(ctx, "CREATE TABLE later_migration (x int); INSERT INTO later_migration VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	rc, err := pgx.Connect(ctx, reader.String())
	if err != nil {
		t.Fatal(err)
	}
	var x int
	if err := rc.QueryRow(ctx, "SELECT x FROM later_migration").Scan(&x); err != nil || x != 1 {
		t.Errorf("the role cannot read a table created after the GRANTs: %v", err)
	}
	if _, err := rc.Exec(ctx, "INSERT INTO later_migration VALUES (2)"); err == nil {
		t.Errorf("the role can write")
	}
	rc.Close(ctx)

	answers := map[string]map[string]any{}
	for _, as := range []string{db, reader.String()} {
		d := e.start("--database", as, "serve", "--addr", "127.0.0.1:0")
		base := "http://" + d.serveAddr()
		for _, path := range []string{"/v1/charts/US", "/v1/search?q=sample", "/v1/videos/sample-0001", "/v1/runs", "/v1/dashboard"} {
			code, body := getJSON(t, base+path)
			if code != 200 || len(body) == 0 {
				t.Errorf("GET %s as %s: %d %v", path, u.User.Username(), code, body)
			}
			if want, ok := answers[path]; ok && fmt.Sprint(dropTimes(want)) != fmt.Sprint(dropTimes(body)) {
				t.Errorf("GET %s: the read-only role's answer differs from the owner's:\n%v\n%v", path, body, want)
			}
			answers[path] = body
		}
		if code := d.stop(syscall.SIGTERM); code != 0 {
			t.Errorf("serve exit %d after SIGTERM, want 0", code)
		}
		log := d.stderr.String()
		if strings.Contains(log, `"level":"error"`) || strings.Contains(log, `"level":"warn"`) || strings.Contains(log, "web-secret") {
			t.Errorf("serve's log shows an error, a warning or the password:\n%s", log)
		}
	}
}

// dropTimes is an answer without the keys that change from one request to
// the next (the server's clock, the quota backend's status).
func dropTimes(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != "generated_at" && k != "credentials" {
			out[k] = v
		}
	}
	return out
}

// TestPostgresPasswordMasked: a PostgreSQL URL's password, given by flag,
// environment or store.url_file, appears in no output of the commands
// that read or write the dataset, in no log line of run or serve, in no
// answer of serve (its metrics included), in no metrics textfile and in
// no export. The notes about an empty database (runs, serve) name it by
// host and name, not by its URL. The test server trusts loopback
// connections, so the password is sent and ignored.
func TestPostgresPasswordMasked(t *testing.T) {
	_, plain := pgDatabase(t)
	_, empty := pgDatabase(t)
	const pw = "pg-s3cret-Pw9"
	withPW := func(db string) string {
		u, err := neturl.Parse(db)
		if err != nil {
			t.Fatal(err)
		}
		u.User = neturl.UserPassword("trendfetch", pw)
		return u.String()
	}
	db := withPW(plain)
	_, url, e := sampleEnv(t, "US")
	textfiles := filepath.Join(e.dir, "textfiles")
	if err := os.Mkdir(textfiles, 0o700); err != nil {
		t.Fatal(err)
	}
	urlFile := filepath.Join(e.dir, "pg-url")
	if err := os.WriteFile(urlFile, []byte(db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileCfg := e.writeConfig("store:\n  url_file: " + urlFile + "\n")
	var seen strings.Builder
	check := func(what string, res result) {
		t.Helper()
		assertNoPanic(t, res.stderr)
		seen.WriteString(res.stdout + res.rawStderr)
		if strings.Contains(res.stdout+res.rawStderr, pw) {
			t.Errorf("%s: the password reached the output:\n%s%s", what, res.stdout, res.rawStderr)
		}
	}
	ways := map[string][]string{
		"flag":     {"--database", db},
		"url_file": {"--config", fileCfg},
	}
	for _, how := range []string{"flag", "env", "url_file"} {
		global := ways[how]
		if how == "env" {
			e.vars["TRENDFETCH_DATABASE"] = db
			global = nil
		}
		res := e.run(append(global, "--api-endpoint", url, "--log-level", "debug", "run", "--region", "US", "--metrics-textfile", textfiles)...)
		if res.code != 0 {
			t.Fatalf("run by %s: exit %d\n%s", how, res.code, res.stderr)
		}
		check("run by "+how, res)
		for _, args := range [][]string{
			{"runs"}, {"runs", "--json"}, {"quota", "status"}, {"quota", "status", "--json"}, {"search", "sample", "--json"},
			{"chart", "--region", "US", "--json"}, {"video", "sample-0001", "--json"}, {"export", "--format", "jsonl"},
			{"prune", "--dry-run"}, {"plan", "--json"}, {"crontab"},
		} {
			check(strings.Join(args, " ")+" by "+how, e.run(append(global, args...)...))
		}
		// search echoes its query: the scrubber knows the password from
		// each source (without it, this output would show it).
		res = e.run(append(global, "search", pw)...)
		check("search PASSWORD by "+how, res)
		if !strings.HasPrefix(res.stdout, "no videos match ") {
			t.Errorf("search PASSWORD by %s: %q, want no videos match and the query masked", how, res.stdout)
		}
		d := e.start(append(global, "--log-level", "debug", "serve", "--addr", "127.0.0.1:0")...)
		base := "http://" + d.serveAddr()
		for _, path := range []string{"/v1/runs", "/v1/dashboard", "/v1/quota", "/metrics", "/healthz"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), pw) {
				t.Errorf("serve by %s: GET %s shows the password", how, path)
			}
		}
		d.stop(syscall.SIGTERM)
		check("serve by "+how, result{rawStderr: d.stderr.String()})
		delete(e.vars, "TRENDFETCH_DATABASE")
	}
	entries, _ := os.ReadDir(textfiles)
	if len(entries) == 0 {
		t.Errorf("no metrics textfile written")
	}
	for _, f := range entries {
		raw, _ := os.ReadFile(filepath.Join(textfiles, f.Name()))
		if strings.Contains(string(raw), pw) {
			t.Errorf("metrics textfile %s shows the password", f.Name())
		}
	}
	// An empty database: the notes name it by host and name.
	for _, args := range [][]string{{"runs"}, {"serve", "--addr", "127.0.0.1:0"}} {
		res := e.runBounded(60*time.Second, append([]string{"--database", withPW(empty)}, args...)...)
		check(args[0]+" on an empty database", res)
		if !strings.Contains(res.stderr, "PostgreSQL database 127.0.0.1/") || strings.Contains(res.rawStderr, "postgres://") {
			t.Errorf("%s on an empty database: no note naming it by host and name, or its URL shown\n%s", args[0], res.stderr)
		}
	}
	if !strings.Contains(seen.String(), "sample-0001") {
		t.Errorf("the commands showed no data: is the test reading the right dataset?")
	}
}

// clockFields matches what differs between two runs of the same data at
// two moments: times (to the minute in human tables), durations, process ids, latencies; and capture ids
// (PostgreSQL's sequence skips the values of inserts that found the row).
var clockFields = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?|"(pid|duration_ms|latency_ms|age_seconds|capture_id|id)":\s*[0-9.]+`)

// unclocked is out with clockFields replaced.
func unclocked(out string) string { return clockFields.ReplaceAllString(out, "<clock>") }

// TestPostgresCommandsMatchSQLite: every command that reads the dataset
// (search, chart, video, runs, export in every format and layout, prune,
// plan, serve's endpoints) answers the same on a PostgreSQL dataset as on a
// SQLite one that the same two runs of two regions filled, times and
// process ids aside (search: the same videos, in any order).
func TestPostgresCommandsMatchSQLite(t *testing.T) {
	_, db := pgDatabase(t)
	emu := youtubetest.New()
	sample := youtubetest.Sample()
	emu.SetChart("US", sample)
	emu.SetChart("GB", sample[10:40])
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	stores := []struct {
		name   string
		global []string
	}{
		{"sqlite", []string{"--database", e.dbPath()}},
		{"postgres", []string{"--database", db}},
	}
	run := func(args ...string) map[string]result {
		t.Helper()
		out := map[string]result{}
		for _, s := range stores {
			e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, s.name+"-quota.db")
			out[s.name] = e.run(append(s.global, args...)...)
		}
		return out
	}
	for i := range 2 {
		for name, res := range run("--api-endpoint", url, "run", "--region", "US", "--region", "GB") {
			if res.code != 0 {
				t.Fatalf("run %d on %s: exit %d\n%s", i+1, name, res.code, res.stderr)
			}
		}
		slices.Reverse(sample) // the second run's chart moves every video
		emu.SetChart("US", sample)
	}
	cases := []struct {
		args []string
		same func(t *testing.T, sqlite, postgres string)
		// output, when set, is given to --output per store (a file, or a
		// directory when it ends in /), and what is written is compared.
		output string
	}{
		{args: []string{"search", "sample", "--json", "--limit", "200"}, same: sameHits},
		{args: []string{"search", `"sample video 1"`, "--region", "GB", "--json"}, same: sameHits},
		{args: []string{"search", "synth* -music", "--json", "--limit", "200"}, same: sameHits},
		{args: []string{"chart", "--region", "US", "--json"}},
		{args: []string{"chart", "--region", "GB", "--csv"}},
		{args: []string{"chart", "--region", "US", "--run", "1", "--json"}},
		{args: []string{"video", "sample-0001", "--json"}},
		{args: []string{"video", "sample-0015"}},
		{args: []string{"runs", "--json"}},
		{args: []string{"runs", "--region", "GB", "--json"}},
		{args: []string{"export", "--layout", "youtube-new", "--region", "US"}},
		{args: []string{"export", "--layout", "trending-daily", "--region-column", "--spreadsheet-safe"}},
		{args: []string{"export", "--format", "jsonl"}},
		{args: []string{"export", "--format", "jsonl", "--every", "capture"}},
		{args: []string{"export", "--layout", "trending-daily"}, output: "csv/"},
		{args: []string{"export", "--format", "parquet"}, output: "all.parquet"},
		{args: []string{"export", "--format", "parquet", "--partition", "region,date"}, output: "parts/"},
		{args: []string{"prune", "--dry-run", "--older-than", "1h", "--json"}},
		{args: []string{"prune", "--dry-run", "--policy", "youtube", "--json"}},
		{args: []string{"plan", "--json"}},
	}
	for i, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := map[string]string{}
			for _, s := range stores {
				e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, s.name+"-quota.db")
				args := c.args
				output := filepath.Join(e.dir, fmt.Sprintf("%s-%d-%s", s.name, i, c.output))
				if c.output != "" {
					if strings.HasSuffix(c.output, "/") {
						output += "/"
					}
					args = append(slices.Clone(args), "--output", output)
				}
				res := e.run(append(s.global, args...)...)
				if res.code != 0 {
					t.Fatalf("%s: exit %d\n%s", s.name, res.code, res.stderr)
				}
				out[s.name] = res.stdout
				if c.output != "" {
					out[s.name] = written(t, output)
				}
			}
			if c.same != nil {
				c.same(t, out["sqlite"], out["postgres"])
			} else if a, b := unclocked(out["sqlite"]), unclocked(out["postgres"]); a != b || len(a) < 20 {
				t.Errorf("the stores answer differently (or nothing): %s", firstDiff(a, b))
			}
		})
	}
	t.Run("serve", func(t *testing.T) {
		answers := map[string]map[string]string{}
		paths := []string{"/v1/charts/US", "/v1/charts/GB?run=1", "/v1/videos/sample-0001", "/v1/runs", "/v1/runs?region=US", "/v1/dashboard", "/v1/search?q=sample&limit=100"}
		for _, s := range stores {
			e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, s.name+"-quota.db")
			d := e.start(append(s.global, "serve", "--addr", "127.0.0.1:0")...)
			base := "http://" + d.serveAddr()
			answers[s.name] = map[string]string{}
			for _, p := range paths {
				resp, err := http.Get(base + p)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("%s: GET %s: %d %s", s.name, p, resp.StatusCode, body)
				}
				answers[s.name][p] = string(body)
			}
			d.stop(syscall.SIGTERM)
		}
		for _, p := range paths {
			a, b := answers["sqlite"][p], answers["postgres"][p]
			if strings.HasPrefix(p, "/v1/search") {
				sameHits(t, a, b)
				continue
			}
			if strings.HasPrefix(p, "/v1/dashboard") {
				a, b = dashboardData(t, a), dashboardData(t, b)
			}
			if unclocked(a) != unclocked(b) {
				t.Errorf("GET %s differs: %s", p, firstDiff(unclocked(a), unclocked(b)))
			}
		}
	})
	// Last, as it deletes: the youtube policy applied 31 days ahead (every
	// text and statistic is older than 30 days then), and what is left.
	asOf := time.Now().AddDate(0, 0, 31).UTC().Format(time.DateOnly)
	for _, args := range [][]string{
		{"prune", "--policy", "youtube", "--as-of", asOf, "--json"},
		{"video", "sample-0001", "--json"}, {"export", "--format", "jsonl"}, {"runs", "--json"},
	} {
		out := run(args...)
		a, b := unclocked(out["sqlite"].stdout), unclocked(out["postgres"].stdout)
		if out["sqlite"].code != out["postgres"].code || a != b || (args[0] == "prune" || args[0] == "runs") && len(a) < 20 {
			t.Errorf("%s after the prune: exit %d and %d, the stores answer differently (or nothing): %s\n%s%s", strings.Join(args, " "),
				out["sqlite"].code, out["postgres"].code, firstDiff(a, b), out["sqlite"].stderr, out["postgres"].stderr)
		}
	}
}

// dashboardData is a /v1/dashboard answer without its quota part (each
// store's run has its own quota database here) and its latencies.
func dashboardData(t *testing.T, body string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("dashboard: %v\n%s", err, body)
	}
	delete(m, "credentials")
	out, _ := json.Marshal(m)
	return string(out)
}

// sameHits compares two search answers (--json, or /v1/search) as sets of
// video ids, not empty.
func sameHits(t *testing.T, sqlite, postgres string) {
	t.Helper()
	ids := func(out string) []string {
		var set []string
		for _, m := range regexp.MustCompile(`"(?:video_)?id":\s*"([^"]+)"`).FindAllStringSubmatch(out, -1) {
			set = append(set, m[1])
		}
		slices.Sort(set)
		return slices.Compact(set)
	}
	a, b := ids(sqlite), ids(postgres)
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Errorf("search finds %d videos on SQLite, %d on PostgreSQL (or none):\n%v\n%v", len(a), len(b), a, b)
	}
}

// written is what an export wrote to path, a file or a directory: each
// file's name (relative) and content, Parquet files as their rows in JSON.
func written(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".parquet") {
			rows, err := parquet.Read[store.ParquetRow](bytes.NewReader(raw), int64(len(raw)))
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			raw, _ = json.Marshal(rows)
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(&b, "== %s\n%s\n", rel, raw)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// firstDiff shows where sqlite and postgres first differ.
func firstDiff(sqlite, postgres string) string {
	i := 0
	for i < len(sqlite) && i < len(postgres) && sqlite[i] == postgres[i] {
		i++
	}
	from := max(i-300, 0)
	return fmt.Sprintf("at byte %d of %d and %d\nsqlite:   ...%.500s\npostgres: ...%.500s", i, len(sqlite), len(postgres), sqlite[from:], postgres[from:])
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// (PEM) into dir, owned by uid and gid, and returns their paths.
func selfSigned(t *testing.T, dir string, uid, gid int) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{cert, "CERTIFICATE", der}, {key, "PRIVATE KEY", kder}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f.path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}

// TestPostgresTLSSettings: the URL's sslmode and sslrootcert reach pgx.
// Against the test server without TLS, sslmode=require fails (exit 1, an
// error naming PostgreSQL and the refused TLS). With TLS turned on (a
// self-signed certificate for 127.0.0.1), sslmode=verify-full with that
// certificate as sslrootcert runs, and with another root certificate it
// fails naming the unknown authority. (An unreadable sslrootcert is a
// configuration error: TestPostgresMalformedURL.)
func TestPostgresTLSSettings(t *testing.T) {
	srv, db := pgDatabase(t)
	emu, url, e := sampleEnv(t, "US")
	e.vars["TRENDFETCH_QUOTA_DB"] = filepath.Join(e.dir, "quota.db")
	tls := func(q string) string { return strings.Replace(db, "sslmode=disable", q, 1) }
	runWith := func(database string) result {
		res := e.runBounded(60*time.Second, "--database", database, "--api-endpoint", url, "run", "--region", "US")
		assertNoPanic(t, res.stderr)
		return res
	}
	if res := runWith(tls("sslmode=require")); res.code != 1 || !strings.Contains(lastLine(res.stderr), "PostgreSQL") ||
		!strings.Contains(lastLine(res.stderr), "server refused TLS connection") {
		t.Errorf("sslmode=require without TLS: exit %d, want 1 naming PostgreSQL and the refused TLS\n%s", res.code, res.stderr)
	}
	if u := emu.Units("k"); u != 0 {
		t.Fatalf("the API charged %d units before the store was open", u)
	}

	// Turn TLS on: the server reads its files as its own user.
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var dataDir string
	if err := admin.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	owner := fi.Sys().(*syscall.Stat_t)
	dir, err := os.MkdirTemp("", "trendfetch-tls-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t, dir, int(owner.Uid), int(owner.Gid))
	other, _ := selfSigned(t, t.TempDir(), os.Getuid(), os.Getgid())
	reload := func(stmts ...string) {
		t.Helper()
		for _, s := range append(stmts, "SELECT pg_reload_conf()") {
			if _, err := admin.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	reload("ALTER SYSTEM SET ssl_cert_file = '"+cert+"'", "ALTER SYSTEM SET ssl_key_file = '"+key+"'", "ALTER SYSTEM SET ssl = on")
	defer reload("ALTER SYSTEM RESET ssl", "ALTER SYSTEM RESET ssl_cert_file", "ALTER SYSTEM RESET ssl_key_file")
	verified := tls("sslmode=verify-full&sslrootcert=" + cert)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := pgx.Connect(ctx, verified)
		if err == nil {
			c.Close(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not turn TLS on: %v", err)
		}
	}
	if res := runWith(verified); res.code != 0 {
		t.Errorf("sslmode=verify-full with the server's certificate: exit %d\n%s", res.code, res.stderr)
	}
	if res := runWith(tls("sslmode=verify-full&sslrootcert=" + other)); res.code != 1 || !strings.Contains(lastLine(res.stderr), "PostgreSQL") ||
		!strings.Contains(lastLine(res.stderr), "certificate signed by unknown authority") {
		t.Errorf("sslmode=verify-full with another root certificate: exit %d, want 1 naming the unknown authority\n%s", res.code, res.stderr)
	}
}
