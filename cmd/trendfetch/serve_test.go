package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// serveAddr waits for the "serving the read API" log line and returns its address.
func (d *daemon) serveAddr() string { return d.listenAddr("the read API listener", "read API") }

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, raw)
	}
	return resp.StatusCode, body
}

func TestServeRefusesANonLoopbackAddressWithoutAToken(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	res := e.run("serve", "--addr", "0.0.0.0:0")
	if res.code != 2 || !strings.Contains(res.stderr, "--token-file") || !strings.Contains(res.stderr, "loopback") {
		t.Errorf("serve on 0.0.0.0 without a token: exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

func TestServeAnswersAndStopsOnSIGTERM(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	d := e.start("serve", "--addr", "127.0.0.1:0")
	base := "http://" + d.serveAddr()
	code, body := getJSON(t, base+"/v1/runs")
	if runs, _ := body["runs"].([]any); code != 200 || len(runs) != 1 {
		t.Fatalf("GET /v1/runs: %d %v", code, body)
	}
	code, body = getJSON(t, base+"/v1/charts/US")
	if entries, _ := body["entries"].([]any); code != 200 || len(entries) == 0 {
		t.Fatalf("GET /v1/charts/US: %d %v", code, body)
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, d.stderr.String())
	}
}

func TestScheduleServesTheAPIWithItsMetrics(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	cfg := e.writeConfig("regions: [US]\nschedule:\n  cron: \"0 0 1 1 *\"\n")
	d := e.start("--config", cfg, "--api-endpoint", url, "schedule", "--serve", "127.0.0.1:0")
	base := "http://" + d.serveAddr()
	code, body := getJSON(t, base+"/v1/regions")
	regions, _ := body["regions"].([]any)
	if code != 200 || len(regions) != 1 || regions[0].(map[string]any)["next_run"] == nil {
		t.Fatalf("GET /v1/regions: %d %v", code, body)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), "trendfetch_last_success_timestamp_seconds") {
		t.Errorf("/metrics lacks the scheduler's collectors:\n%.500s", raw)
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, d.stderr.String())
	}
}

// heavyStore fills the database of e with videos many words of whose text
// start with every letter, so that heavyQuery makes SQLite work for long
// (seconds at 3,000 videos with the FTS5 index of this branch): a slow
// store call whatever the index does with it.
func heavyStore(t *testing.T, e *env, videos int) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, e.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runID, err := st.StartRun(ctx, store.Run{Credential: "default", Region: "US"})
	if err != nil {
		t.Fatal(err)
	}
	vocab := storetest.NewVocab(42, 30_000)
	for first := 0; first < videos; first += 50 {
		page := make([]store.Video, 0, 50)
		for i := first; i < first+50 && i < videos; i++ {
			page = append(page, store.Video{ID: fmt.Sprintf("heavy%06d", i), Title: vocab.Text(60),
				Description: vocab.Text(500), ChannelTitle: "Channel " + strconv.Itoa(i%100), Tags: vocab.Tags(10)})
		}
		if err := st.SaveSnapshot(ctx, store.Snapshot{RunID: runID, Region: "US", FirstRank: first + 1, Videos: page}); err != nil {
			t.Fatal(err)
		}
	}
}

// heavyQuery ORs a prefix of every letter at the largest limit.
func heavyQuery() string {
	var terms []string
	for c := 'a'; c <= 'z'; c++ {
		terms = append(terms, string(c)+"*")
	}
	return "/v1/search?limit=" + strconv.Itoa(store.MaxSearchLimit) + "&q=" + url.QueryEscape(strings.Join(terms, " OR "))
}

// cpuSeconds is the user+system CPU time of process pid so far (Linux).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// TestServeBoundsHeavyRequests (issue 21.1): while 8 of the heaviest
// searches run, /healthz answers within a second (heavy requests cannot
// take every database connection); when their clients go away, the server
// stops working on them (its CPU time stops growing); and a request past
// serve.timeout is answered 503 with a JSON error.
func TestServeBoundsHeavyRequests(t *testing.T) {
	e := newEnv(t)
	heavyStore(t, e, 3000)
	d := e.start("--config", e.writeConfig("serve:\n  timeout: 60s\n"), "serve", "--addr", "127.0.0.1:0")
	base := "http://" + d.serveAddr()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+heavyQuery(), nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // let them start
	t0 := time.Now()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/healthz")
	took := time.Since(t0)
	if err != nil {
		cancel()
		t.Fatalf("/healthz while 8 heavy searches run: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || took > time.Second {
		t.Errorf("/healthz while 8 heavy searches run: %d after %s, want 200 within 1s", resp.StatusCode, took)
	}

	// The clients go away: the server's CPU time must stop growing.
	cancel()
	wg.Wait()
	time.Sleep(300 * time.Millisecond)
	pid := d.cmd.Process.Pid
	c0 := cpuSeconds(t, pid)
	time.Sleep(1500 * time.Millisecond)
	if used := cpuSeconds(t, pid) - c0; used > 0.15 {
		t.Errorf("the server used %.2f s of CPU in the 1.5 s after its clients went away: their queries were not cancelled", used)
	}
	d.stop(syscall.SIGTERM)

	// serve.timeout: every request past it is cancelled and answered 503.
	d = e.start("--config", e.writeConfig("serve:\n  timeout: 1ms\n"), "serve", "--addr", "127.0.0.1:0")
	base = "http://" + d.serveAddr()
	code, body := getJSON(t, base+heavyQuery())
	if e, _ := body["error"].(map[string]any); code != 503 || e["code"] != "timeout" || !strings.Contains(e["message"].(string), "serve.timeout") {
		t.Errorf("heavy search past serve.timeout: %d %v, want 503 timeout naming serve.timeout", code, body)
	}
}

// startAs is env.start for another user (root only).
func (e *env) startAs(uid, gid uint32, args ...string) *daemon {
	e.t.Helper()
	return e.startWith(&syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}, args...)
}

// TestServeAsAServiceUser (issue 21.5): serve runs as a user who cannot
// write quota.db (nobody; quota.db root's, mode 0644, in its own directory,
// which like the database directory is group-writable for nobody as the
// docs/api.md advises, every file the writer's), answers data and quota from
// them, and /healthz reads the data.
func TestServeAsAServiceUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run serve as nobody")
	}
	const nobody, nogroup = 65534, 65534
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	dataDir := filepath.Dir(e.dbPath())
	quotaDir := filepath.Join(e.dir, "quota")
	quotaDB := filepath.Join(quotaDir, "quota.db")
	if err := os.Mkdir(quotaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dataDir, "quota.db"), quotaDB); err != nil {
		t.Fatal(err)
	}
	// A reader that is not the writer creates the WAL index beside the
	// file when no writer has it open (internal/sqlitedb, the store's rule
	// too): the quota directory is the writers' group's, as the data
	// directory below.
	if err := os.Chown(quotaDir, 0, nogroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(quotaDir, 0o775); err != nil {
		t.Fatal(err)
	}
	// The path to the binary and the databases is traversable.
	for _, p := range []string{filepath.Dir(binary), e.dir, filepath.Dir(e.dir), filepath.Join(e.dir, "data")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dataDir, 0, nogroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dataDir, 0o775); err != nil {
		t.Fatal(err)
	}
	cfg := e.writeConfig(fmt.Sprintf("database: %s\nquota:\n  sqlite:\n    path: %s\n", e.dbPath(), quotaDB))
	if err := os.Chmod(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(quotaDB)
	e.vars["HOME"] = dataDir
	d := e.startAs(nobody, nogroup, "--config", cfg, "serve", "--addr", "127.0.0.1:0")
	base := "http://" + d.serveAddr()
	for _, path := range []string{"/healthz", "/v1/charts/US", "/v1/runs"} {
		if code, body := getJSON(t, base+path); code != 200 {
			t.Errorf("GET %s as nobody: %d %v", path, code, body)
		}
	}
	code, body := getJSON(t, base+"/v1/quota")
	creds, _ := body["credentials"].([]any)
	if code != 200 || len(creds) != 1 || creds[0].(map[string]any)["reachable"] != true {
		t.Errorf("GET /v1/quota as nobody: %d %v", code, body)
	}
	if after, _ := os.ReadFile(quotaDB); !bytes.Equal(before, after) {
		t.Error("serve changed quota.db")
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, d.stderr.String())
	}
}

// TestRunsRegionInTheCLIAsInTheAPI (issue 21.16): `runs --region` keeps
// the runs of that region, as /v1/runs?region= does.
func TestRunsRegionInTheCLIAsInTheAPI(t *testing.T) {
	_, url, e := sampleEnv(t, "US", "GB")
	for _, r := range []string{"US", "GB", "US"} {
		if res := e.run("--api-endpoint", url, "run", "--region", r); res.code != 0 {
			t.Fatalf("run %s: exit %d\n%s", r, res.code, res.stderr)
		}
	}
	res := e.run("runs", "--region", "gb", "--json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &runs); err != nil || res.code != 0 {
		t.Fatalf("runs --region gb: exit %d %v\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	if len(runs) != 1 || runs[0]["region"] != "GB" {
		t.Errorf("runs --region gb: %v, want the one GB run", runs)
	}
	if res := e.run("runs", "--region", "XX"); res.code != 2 {
		t.Errorf("runs --region XX: exit %d, want 2\n%s", res.code, res.stderr)
	}
}

// TestServeGuardsTheProcess (issues 21.2-21.4): the binary checks Host
// (DNS rebinding gets 421), sends the security headers, caps connections
// per address (serve.max_conns_per_ip), and its /healthz has the shared
// shape.
func TestServeGuardsTheProcess(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	d := e.start("--config", e.writeConfig("serve:\n  max_conns_per_ip: 2\n  hosts: [trends.example.org]\n"), "serve", "--addr", "127.0.0.1:0")
	addr := d.serveAddr()
	base := "http://" + addr
	for host, want := range map[string]int{"attacker.example": 421, "trends.example.org": 200, "localhost": 200} {
		req, _ := http.NewRequest("GET", base+"/v1/regions", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("Host %s: headers %v", host, resp.Header)
		}
	}
	if code, body := getJSON(t, base+"/healthz"); code != 200 || body["status"] != "ok" || body["error"] != nil || len(body) != 2 {
		t.Errorf("/healthz: %d %v", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
	// Two connections that the server counts (it may still count the
	// client's closed ones for a moment: retry until served).
	alive := func() net.Conn {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil && resp.StatusCode == 200 {
				resp.Body.Close()
				return c
			}
			c.Close()
			if time.Now().After(deadline) {
				t.Fatalf("no connection served: %v %v", resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	a, b := alive(), alive()
	defer a.Close()
	defer b.Close()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 503 {
		t.Errorf("3rd connection with max_conns_per_ip 2: %v %v, want 503", resp, err)
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, d.stderr.String())
	}
}

// TestSecondSignalIsLoggedAsJSON: a second SIGTERM while serve waits for a
// request still being sent exits at once (143), and the line saying so is
// JSON like the rest of a non-terminal log (issue 24: pure JSON logs).
func TestSecondSignalIsLoggedAsJSON(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	d := e.start("serve", "--addr", "127.0.0.1:0")
	conn, err := net.Dial("tcp", d.serveAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Half a request: the connection is active, so shutdown waits for it.
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the server has read the first bytes
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Shutdown now waits for the half-sent request (up to the 5 s header
	// timeout): the second signal lands well inside it.
	time.Sleep(300 * time.Millisecond)
	if code := d.stop(syscall.SIGTERM); code != 143 {
		t.Fatalf("exit %d after a second SIGTERM, want 143; stderr:\n%s", code, d.stderr.String())
	}
	second := false
	for _, line := range strings.Split(strings.TrimSpace(d.stderr.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		if msg, _ := ev["error"].(string); strings.Contains(msg, "second SIGTERM") && ev["exit_code"] == float64(143) {
			second = true
		}
	}
	if !second {
		t.Errorf("no JSON event for the second signal in:\n%s", d.stderr.String())
	}
}

// TestServeWarnsOfAReadableTokenFile (issue 40 item 18): a --token-file
// other users can read is warned about as a 0644 api_key_file is; a 0600 one
// is not.
func TestServeWarnsOfAReadableTokenFile(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o600} {
		p := newInproc(t, "", nil)
		token := filepath.Join(p.dir, "token")
		if err := os.WriteFile(token, []byte("0123456789abcdefghijklmn\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(token, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		o := &serveOptions{engine: p.engine(), log: p.a.log, settings: &p.a.cfg.Serve, addr: "127.0.0.1:0", tokenFile: token}
		err := serveRun(context.Background(), o) // no database: returns at once
		warned := strings.Contains(p.errOut.String(), "secret file is readable by other users") && strings.Contains(p.errOut.String(), token)
		if warned != (mode == 0o644) || err == nil {
			t.Errorf("--token-file mode %o: warned %v, want %v (serve: %v)\n%s", mode, warned, mode == 0o644, err, p.errOut.String())
		}
	}
}
