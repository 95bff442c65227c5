package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/secret"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
	"google.golang.org/api/youtube/v3"
)

// TestSecretsNeverLeak runs trendfetch with an API key (from the
// environment, then from a key file) through runs that succeed, fail, are
// denied and are rejected, at trace log level, and greps every output for
// the key: stdout, stderr, the database files, the quota database, Redis
// keys and values, `quota status` and `runs`.
func TestSecretsNeverLeak(t *testing.T) {
	const key = "AIzaSyD-SECRET-never-leak-0123456789abcd"
	srv := redistest.Start(t)
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["TRENDFETCH_LOG_LEVEL"] = "trace"
	e.vars["TRENDFETCH_REDIS_URL"] = srv.URL()
	keyFile := filepath.Join(e.dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	denyCfg := e.writeConfig("quota:\n  buckets:\n    - {name: units, limit: 1, window: 1h}\n  costs:\n    videos.list: {units: 1}\n")
	keyFileCfg := filepath.Join(e.dir, "keyfile.yaml")
	if err := os.WriteFile(keyFileCfg, []byte("credentials:\n  - name: proj\n    api_key_env: NOT_SET\n    api_key_file: "+keyFile+"\ncredential: proj\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var outputs []string
	run := func(withEnvKey bool, args ...string) int {
		if withEnvKey {
			e.vars["YOUTUBE_API_KEY"] = key
		} else {
			delete(e.vars, "YOUTUBE_API_KEY")
		}
		res := e.run(append([]string{"--api-endpoint", url}, args...)...)
		outputs = append(outputs, strings.Join(args, " ")+"\n"+res.stdout+res.stderr)
		return res.code
	}
	expect := func(code, want int, what string) {
		t.Helper()
		if code != want {
			t.Errorf("%s: exit %d, want %d", what, code, want)
		}
	}
	expect(run(true, "run", "--region", "US"), 0, "success")
	expect(run(true, "run", "--region", "ZW"), 1, "videoChartNotFound")
	expect(run(false, "--config", keyFileCfg, "run", "--region", "US"), 0, "key from a file")
	emu.SetKeys("some-other-key")
	expect(run(true, "run", "--region", "US"), 2, "keyInvalid")
	emu.SetKeys()
	expect(run(true, "--config", denyCfg, "--quota-backend", "sqlite", "run", "--region", "US"), 75, "denied")
	if emu.Units(key) < 5 {
		t.Errorf("the emulator saw %d units spent with the key: the runs did not use it", emu.Units(key))
	}
	run(true, "quota", "status")
	run(true, "quota", "status", "--json")
	run(true, "runs", "--json")
	run(true, "runs")
	srv.Kill()
	run(true, "run", "--region", "US") // Redis down: fail-open warning
	srv.Restart()

	for _, out := range outputs {
		if strings.Contains(out, key) {
			t.Errorf("API key in output of: %s", out)
		}
	}
	if !strings.Contains(strings.Join(outputs, ""), "keyInvalid") {
		t.Error("the keyInvalid run did not say why it failed")
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "data", "trendfetch", "*"))
	if len(files) < 2 {
		t.Fatalf("expected database files, found %v", files)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), key) {
			t.Errorf("API key stored in %s", f)
		}
	}
	// Redis was restarted empty; check a live one after a run.
	run(true, "run", "--region", "US")
	keys := srv.Do("--scan")
	if !strings.Contains(keys, "trendfetch:{default}:") {
		t.Errorf("no trendfetch keys in Redis after a run: %q", keys)
	}
	for _, k := range strings.Fields(keys) {
		val := srv.Do("--no-raw", "DUMP", k)
		if strings.Contains(k, key) || strings.Contains(val, key) {
			t.Errorf("API key in Redis key %q or its value", k)
		}
	}
}

// echoServer answers every request as a misbehaving upstream that quotes the
// request back: status 502 with an HTML body holding the request line, or a
// googleapi JSON error (400 or 500) whose message echoes the full URL.
func echoServer(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.RequestURI + " " + r.Proto
		if status == http.StatusBadGateway {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			fmt.Fprintf(w, "<html><body>bad gateway for %s</body></html>", line)
			return
		}
		full := "http://" + r.Host + r.RequestURI
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"code": status, "message": "Request " + full + " failed",
			"errors": []map[string]any{{"reason": "backendError", "domain": "global", "message": "cannot serve " + full}},
		}})
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestSecretsEchoedByUpstreamAreScrubbed runs against servers that echo the
// request URL (key included) in their error bodies, with a password-protected
// Redis and with the embedded backend, for a key from the environment and a
// second credential's key from a file, at trace level. No key and no Redis
// password may reach stdout, stderr (logs, retry warnings, the final line),
// either database, `runs --json` or Redis.
func TestSecretsEchoedByUpstreamAreScrubbed(t *testing.T) {
	const (
		key     = "AIzaSyD-ECHOED-never-leak-0123456789ab"
		fileKey = "AIzaSyF-FILEKEY-never-leak-9876543210cd"
		redisPW = "redis-PW-never-leak-42"
	)
	srv := redistest.Start(t, "--requirepass", redisPW)
	e := newEnv(t)
	e.vars["TRENDFETCH_LOG_LEVEL"] = "trace"
	e.vars["YOUTUBE_API_KEY"] = key
	keyFile := filepath.Join(e.dir, "key2")
	if err := os.WriteFile(keyFile, []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := e.writeConfig("api:\n  retries: 1\n  retry_backoff: 1ms\ncredentials:\n  - name: default\n    api_key_env: YOUTUBE_API_KEY\n  - name: second\n    api_key_env: NOT_SET\n    api_key_file: " + keyFile + "\n")
	redisURL := "redis://:" + redisPW + "@" + srv.Addr + "/0"

	var outputs []string
	for _, status := range []int{http.StatusBadGateway, http.StatusBadRequest, http.StatusInternalServerError} {
		url := echoServer(t, status)
		for _, backend := range []string{"redis", "sqlite"} {
			for _, cred := range []string{"default", "second"} {
				if backend == "redis" {
					e.vars["TRENDFETCH_REDIS_URL"] = redisURL
				} else {
					delete(e.vars, "TRENDFETCH_REDIS_URL")
				}
				args := []string{"--config", cfg, "--api-endpoint", url, "--quota-backend", backend, "--credential", cred, "run", "--region", "US"}
				res := e.run(args...)
				if res.code != 1 {
					t.Errorf("%v: exit %d, want 1\n%s", args, res.code, res.stderr)
				}
				outputs = append(outputs, strings.Join(args, " ")+"\n"+res.stdout+res.stderr)
			}
		}
	}
	e.vars["TRENDFETCH_REDIS_URL"] = redisURL
	for _, args := range [][]string{{"runs", "--json"}, {"runs"}, {"quota", "status", "--json"}} {
		res := e.run(append([]string{"--config", cfg}, args...)...)
		outputs = append(outputs, strings.Join(args, " ")+"\n"+res.stdout+res.stderr)
	}
	all := strings.Join(outputs, "\n")
	for _, secret := range []string{key, fileKey, redisPW} {
		for _, out := range outputs {
			if strings.Contains(out, secret) {
				t.Errorf("secret %q in output of: %s", secret, out)
			}
		}
	}
	for _, want := range []string{"bad gateway for GET", "backendError", "[REDACTED]"} {
		if !strings.Contains(all, want) {
			t.Errorf("outputs never say %q: the upstream error is not reported", want)
		}
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "data", "trendfetch", "*"))
	if len(files) < 2 {
		t.Fatalf("expected database files, found %v", files)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{key, fileKey, redisPW} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("secret %q stored in %s", secret, f)
			}
		}
	}
	auth := []string{"--no-auth-warning", "-a", redisPW}
	keys := srv.Do(append(auth, "--scan")...)
	if !strings.Contains(keys, "trendfetch:") {
		t.Errorf("no trendfetch keys in Redis after the runs: %q", keys)
	}
	for _, k := range strings.Fields(keys) {
		val := srv.Do(append(auth, "--no-raw", "DUMP", k)...)
		for _, secret := range []string{key, fileKey, redisPW} {
			if strings.Contains(k, secret) || strings.Contains(val, secret) {
				t.Errorf("secret %q in Redis key %q or its value", secret, k)
			}
		}
	}
}

// TestMalformedRedisURLNamesTheProblemWithoutThePassword: a Redis URL that
// does not parse exits 2 with one line naming the setting, never the password.
func TestMalformedRedisURLNamesTheProblemWithoutThePassword(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	for _, tc := range []struct{ url, secret string }{
		{"redis://:PWa/bLEAK@127.0.0.1:6379/0", "bLEAK"},
		{"redis://:PW#hashLEAK@127.0.0.1:6379/0", "hashLEAK"},
		{"redis://:PW?askLEAK@127.0.0.1:6379/0", "askLEAK"},
		{"redis://127.0.0.1:6379/0?password=queryLEAK&bogus=1", "queryLEAK"},
		{"redis://127.0.0.1:6379/zero?password=dbLEAK", "dbLEAK"},
		{"redis:/:oneSlashLEAK@127.0.0.1:6379", "oneSlashLEAK"},
		{"rediss:/:Sh0rt@127.0.0.1:6379", "Sh0rt"},
		{"onlyThePasswordLEAK", "onlyThePasswordLEAK"},
	} {
		e.vars["TRENDFETCH_REDIS_URL"] = tc.url
		for _, args := range [][]string{{"run", "--region", "US"}, {"quota", "status"}} {
			res := e.run(append([]string{"--api-endpoint", url}, args...)...)
			out := res.stdout + res.stderr
			if res.code != 2 {
				t.Errorf("%s %v: exit %d, want 2\n%s", tc.url, args, res.code, out)
			}
			if strings.Contains(out, tc.secret) {
				t.Errorf("%s %v: password in output:\n%s", tc.url, args, out)
			}
			if !strings.Contains(res.stderr, "TRENDFETCH_REDIS_URL") {
				t.Errorf("%s %v: the message does not name the setting:\n%s", tc.url, args, res.stderr)
			}
		}
	}
}

// TestRedisURLFileHoldingOnlyThePassword: a url_file whose content is no
// URL (the password alone, or a URL with a single slash) exits 2 naming the
// setting and what is wrong, and never prints the content.
func TestRedisURLFileHoldingOnlyThePassword(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	for _, content := range []string{"fileOnlyPasswordLEAK", "redis:/:fileSlashLEAK@127.0.0.1:6379/0"} {
		f := filepath.Join(e.dir, "redis-url")
		if err := os.WriteFile(f, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := e.writeConfig("quota:\n  redis:\n    url_file: " + f + "\n")
		for _, args := range [][]string{{"run", "--region", "US"}, {"quota", "status"}} {
			res := e.run(append([]string{"--config", cfg, "--api-endpoint", url}, args...)...)
			out := res.stdout + res.stderr
			if res.code != 2 || !strings.Contains(res.stderr, "quota.redis.url_file") {
				t.Errorf("%q %v: exit %d, want 2 naming quota.redis.url_file\n%s", content, args, res.code, out)
			}
			if strings.Contains(out, "LEAK") {
				t.Errorf("%q %v: the file's content in the output:\n%s", content, args, out)
			}
		}
	}
}

// TestKeyFragmentsEchoedByUpstreamAreScrubbed: an upstream error that
// echoes the API key minus its last characters, or from its middle on,
// leaks no run of 8 or more of the key's characters to stderr, the run's
// stored reason or `runs`.
func TestKeyFragmentsEchoedByUpstreamAreScrubbed(t *testing.T) {
	const key = "AIzaSyD-FRAGMENTS-never-leak-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.URL.Query().Get("key")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"code": 500, "message": "backend failed for key " + k[:len(k)-3] + "... (tail " + k[15:] + ")",
			"errors": []map[string]any{{"reason": "backendError", "domain": "global", "message": "key prefix " + k[:12]}},
		}})
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = key
	cfg := e.writeConfig("api:\n  retries: 1\n  retry_backoff: 1ms\n")
	res := e.run("--config", cfg, "--api-endpoint", srv.URL+"/", "--log-level", "trace", "run", "--region", "US")
	if res.code != 1 || !strings.Contains(res.stderr, "backendError") {
		t.Fatalf("exit %d, want 1 reporting the upstream error\n%s", res.code, res.stderr)
	}
	runs := e.run("--config", cfg, "runs", "--json")
	human := e.run("--config", cfg, "runs")
	for what, out := range map[string]string{"run": res.stdout + res.stderr, "runs --json": runs.stdout, "runs": human.stdout} {
		for i := 0; i+8 <= len(key); i++ {
			if strings.Contains(out, key[i:i+8]) {
				t.Errorf("%s: the key's fragment %q in the output:\n%s", what, key[i:i+8], out)
				break
			}
		}
	}
	if !strings.Contains(runs.stdout, "[REDACTED]") {
		t.Errorf("the stored reason does not show where the key was masked:\n%s", runs.stdout)
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "data", "trendfetch", "*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), key[:12]) || strings.Contains(string(raw), key[15:]) {
			t.Errorf("a fragment of the key is stored in %s", f)
		}
	}
}

// TestEndlessResponseIsRefused: a server that streams an endless 200 body
// makes the run fail (exit 1) naming the cap, after the client read at most
// a few MB per attempt, never the whole stream.
func TestEndlessResponseIsRefused(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"items":[`))
		chunk := []byte(strings.Repeat(`{"id":"xxxxxxxxxxx"},`, 3000))
		for r.Context().Err() == nil && sent.Load() < 1<<30 {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	cfg := e.writeConfig("api:\n  retries: 1\n  retry_backoff: 1ms\n")
	res := e.runBounded(60*time.Second, "--config", cfg, "--api-endpoint", srv.URL+"/", "run", "--region", "US")
	if res.code != 1 || !strings.Contains(res.stderr, "response body too large") {
		t.Errorf("exit %d, want 1 naming the cap\n%s", res.code, res.stderr)
	}
	if n := sent.Load(); n > 64<<20 {
		t.Errorf("the server sent %d MB before the client stopped reading", n>>20)
	}
}

// TestKeyEchoedInVideoFieldsIsNeverStored (issue 31 item 9): the API
// answers with the key inside every text of a video (title, description,
// tags, channel title, thumbnail), of a channel and of a category, and a
// search query holds it: no database file and no export (JSON Lines, both
// CSV layouts, Parquet read back by DuckDB, video --json) holds the key.
func TestKeyEchoedInVideoFieldsIsNeverStored(t *testing.T) {
	const key = "AIzaSyE-ECHOED-in-video-fields-0123456"
	emu := youtubetest.New()
	vs := youtubetest.Sample()
	v := vs[0].Snippet
	v.Title, v.Description, v.ChannelTitle = "title "+key, "description\n"+key, "channel "+key
	v.Tags = []string{"tag " + key, key}
	v.Thumbnails.Default.Url = "https://i.ytimg.com/" + key + "/default.jpg"
	emu.SetChart("US", vs)
	chans, _ := json.Marshal(youtube.ChannelListResponse{Items: []*youtube.Channel{
		{Id: v.ChannelId, Snippet: &youtube.ChannelSnippet{Title: "channel " + key, Country: "US"}}}})
	cats := strings.Replace(string(youtubetest.SampleCategories()), `"title":"`, `"title":"`+key+` `, 1)
	p1, err := os.ReadFile(filepath.Join(youtubetest.DataDir(t), "api_json", "pyyoutube__search_search_by_keywords_p1.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{emu.SetChannels(chans), emu.SetCategories("", []byte(cats)), emu.SetSearchPages(p1)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = key
	cfg := e.writeConfig("searches:\n  - q: surf " + key + "\nchannels:\n  enabled: true\ncategories:\n  enabled: true\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	delete(e.vars, "YOUTUBE_API_KEY") // so that printed output is not masked on the way out
	out := filepath.Join(e.dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", "--format", "jsonl", "--every", "capture", "--output", filepath.Join(out, "all.jsonl")},
		{"export", "--format", "parquet", "--every", "capture", "--output", filepath.Join(out, "all.parquet")},
		{"export", "--layout", "youtube-new", "--output", filepath.Join(out, "youtube-new") + "/"},
		{"export", "--layout", "trending-daily", "--output", filepath.Join(out, "trending-daily") + "/"},
		{"video", "--json", vs[0].Id},
	} {
		res := e.run(append([]string{"--config", cfg}, args...)...)
		if res.code != 0 || strings.Contains(res.stdout, key) {
			t.Errorf("%v: exit %d, key in output: %v\n%s", args, res.code, strings.Contains(res.stdout, key), res.stderr)
		}
	}
	files := map[string]string{}
	for _, dir := range []string{filepath.Dir(e.dbPath()), out, filepath.Join(out, "youtube-new"), filepath.Join(out, "trending-daily")} {
		names, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, name := range names {
			if b, err := os.ReadFile(name); err == nil {
				files[name] = string(b)
			}
		}
	}
	files["all.parquet read by DuckDB"] = storetest.DuckDB(t, "SELECT * FROM read_parquet('"+filepath.Join(out, "all.parquet")+"')")
	if !strings.Contains(files[filepath.Join(out, "all.jsonl")], "title "+secret.Mask) {
		t.Errorf("the echoing video was not exported with its title masked:\n%.300s", files[filepath.Join(out, "all.jsonl")])
	}
	for name, b := range files {
		if strings.Contains(b, key) {
			t.Errorf("the key is in %s", name)
		}
	}
}

// TestScrubberLeavesCapturedTextAndOutput (issue 40 item 1): with a
// self-hosted check-in URL .../ping/<uuid> and a database password that is
// a word, a title and a tag sharing characters with "ping" are stored,
// exported and found as captured, and `version` and the systemd units keep
// "trendfetch"; the UUID and the password stay masked where they stand.
func TestScrubberLeavesCapturedTextAndOutput(t *testing.T) {
	const id = "0f3c2d55-4a5d-4a4b-9a3e-1d2c3b4a5f6e"
	const title = "Shopping haul: camping and sleeping gear"
	var pings atomic.Int64
	hc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pings.Add(1) }))
	t.Cleanup(hc.Close)
	emu := youtubetest.New()
	vs := youtubetest.Sample()
	vs[0].Snippet.Title, vs[0].Snippet.Tags = title, []string{"ping", "sleeping"}
	emu.SetChart("US", vs)
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "AIzaSyD-CAPTURED-as-is-0123456789abcd"
	e.vars["TRENDFETCH_CHECKIN_URL"] = hc.URL + "/ping/" + id
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 || pings.Load() < 2 {
		t.Fatalf("run: exit %d, %d pings\n%s", res.code, pings.Load(), res.stderr)
	}
	jsonl := e.run("export", "--format", "jsonl", "--every", "capture")
	found := e.run("search", "--json", "shopping")
	video := e.run("video", "--json", vs[0].Id)
	for what, out := range map[string]string{"export": jsonl.stdout, "search shopping": found.stdout, "video": video.stdout} {
		if !strings.Contains(out, title) || strings.Contains(out, secret.Mask) {
			t.Errorf("%s: the title is not as captured:\n%.600s", what, out)
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(video.stdout), ""), `"tags":["ping","sleeping"]`) {
		t.Errorf("video: the tags are not as captured:\n%s", video.stdout)
	}
	raw, err := os.ReadFile(e.dbPath())
	if err != nil || !strings.Contains(string(raw), title) {
		t.Errorf("the database does not hold the title as captured (%v)", err)
	}
	if res := e.run("--log-level", "debug", "runs", "--json"); strings.Contains(res.stdout+res.stderr, id) {
		t.Errorf("the check-in UUID in the output:\n%s", res.stdout+res.stderr)
	}
	delete(e.vars, "TRENDFETCH_CHECKIN_URL")
	e.vars["TRENDFETCH_DATABASE"] = "postgres://trendfetch:trendfetch@127.0.0.1:1/trendfetch"
	if res := e.run("version"); !strings.HasPrefix(res.stdout, "trendfetch ") {
		t.Errorf("version: %q", res.stdout)
	}
	units := e.run("crontab", "--format", "systemd")
	if !strings.Contains(units.stdout, "User=trendfetch") || strings.Contains(units.stdout, secret.Mask) {
		t.Errorf("crontab --format systemd: exit %d, the user name masked:\n%s%s", units.code, units.stdout, units.stderr)
	}
}
