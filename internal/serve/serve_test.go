package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

// filledStore runs the real pipeline (youtube/v3 client -> emulator ->
// limiter -> SQLite) twice for US and GB, the second time with the chart
// reversed so ranks change, and returns the database path and the quota
// limiter the runs spent from.
func filledStore(t testing.TB) (string, *quota.Limiter) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "tf.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	lim := fillStore(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return db, lim
}

// fillStore stores in st (either engine) what filledStore's store holds:
// the emulator's US and GB charts, then the US chart reversed, through
// the fetch runner; it returns the runner's quota limiter.
func fillStore(t testing.TB, st *store.Store) *quota.Limiter {
	t.Helper()
	ctx := context.Background()
	emu := youtubetest.New()
	sample := youtubetest.Sample()
	emu.SetChart("US", sample)
	emu.SetChart("GB", sample[:30])
	url := emu.StartTest(t)
	svc, err := fetch.NewService(ctx, "k", url+"/")
	if err != nil {
		t.Fatal(err)
	}
	buckets, costs, err := config.Default().Limits()
	if err != nil {
		t.Fatal(err)
	}
	qb, err := quota.NewSQLite(filepath.Join(t.TempDir(), "quota.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := quota.New(qb, buckets, costs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	r := &fetch.Runner{Service: svc, Limiter: lim, Store: st, Credential: "proj", Policy: config.Default().Policy,
		Settings: fetch.Settings{Timeout: 5 * time.Second}, Log: zerolog.Nop()}
	for _, region := range []string{"US", "GB"} {
		if _, err := r.Run(ctx, region, fetch.Lease{}); err != nil {
			t.Fatal(err)
		}
	}
	rev := slices.Clone(sample)
	slices.Reverse(rev)
	emu.SetChart("US", rev)
	if _, err := r.Run(ctx, "US", fetch.Lease{}); err != nil {
		t.Fatal(err)
	}
	return lim
}

type fixture struct {
	url  string
	lim  *quota.Limiter
	clk  *clock
	opts Options
}

// clock is a stepped clock for the rate limiter.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// start serves the filled store read-only with a 60/min memory rate limiter
// (the sliding-window counter) on a stepped clock; change opts with edit.
func start(t *testing.T, db string, lim *quota.Limiter, edit func(*Options)) *fixture {
	t.Helper()
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &clock{now: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}
	rl := NewCounter(60, time.Minute, clk.Now)
	o := Options{
		Store: st,
		Quota: func(ctx context.Context) []quota.Status { return []quota.Status{lim.Status(ctx, "proj")} },
		Regions: func(now time.Time) []Region {
			next := now.Add(time.Hour).UTC()
			return []Region{{Region: "US", Name: "United States", Schedule: new("every 2h0m0s"), NextRun: &next}, {Region: "GB", Name: "United Kingdom", Schedule: new("every 2h0m0s +3m0s")}}
		},
		Coverage:  oneMissedSlot(clk.Now),
		Metrics:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "# metrics\n") }),
		RateLimit: RateLimit{Limiter: rl, Limit: 60, Window: time.Minute, Key: "ip"},
		Log:       zerolog.Nop(),
	}
	if edit != nil {
		edit(&o)
	}
	ts := httptest.NewServer(Handler(o))
	t.Cleanup(ts.Close)
	return &fixture{url: ts.URL, lim: lim, clk: clk, opts: o}
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", url, err, raw)
		}
	}
	return resp, body
}

var (
	sharedOnce sync.Once
	sharedDB   string
	sharedLim  *quota.Limiter
)

// shared fills one store for the read-only tests of this package.
func shared(t *testing.T) (string, *quota.Limiter) {
	sharedOnce.Do(func() {
		tb := &onceTB{TB: t, dir: packageTempDir(t, "serve-test")}
		sharedDB, sharedLim = filledStore(tb)
	})
	if sharedDB == "" {
		t.Fatal("filling the shared store failed")
	}
	return sharedDB, sharedLim
}

// packageDirs are the temporary directories of stores shared by several
// tests or benchmarks; TestMain removes them when every test has run.
var packageDirs []string

// packageTempDir makes a temporary directory that lives until the end of
// the test binary (t.TempDir ends with the test that made it).
func packageTempDir(tb testing.TB, prefix string) string {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	packageDirs = append(packageDirs, d)
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range packageDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// onceTB keeps the shared store alive past the test that made it.
type onceTB struct {
	testing.TB
	dir string
	n   int
}

func (o *onceTB) TempDir() string {
	o.n++
	d := filepath.Join(o.dir, strconv.Itoa(o.n))
	os.MkdirAll(d, 0o755)
	return d
}
func (o *onceTB) Cleanup(func()) {}

func TestAPIAnswersInTheCLIShapes(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)

	resp, body := get(t, f.url+"/v1/charts/US")
	if resp.StatusCode != 200 {
		t.Fatalf("charts/US: %d %v", resp.StatusCode, body)
	}
	entries := body["entries"].([]any)
	capture := body["capture"].(map[string]any)
	first := entries[0].(map[string]any)
	sample := youtubetest.Sample()
	if len(entries) != len(sample) || first["video_id"] != sample[len(sample)-1].Id || capture["complete"] != true {
		t.Errorf("latest US chart: %d entries, first %v, capture %v; want the reversed sample", len(entries), first["video_id"], capture)
	}
	for _, k := range []string{"rank", "video_id", "title", "channel_title", "view_count", "like_count", "comment_count"} {
		if _, ok := first[k]; !ok {
			t.Errorf("entry lacks %q: %v", k, first)
		}
	}
	// The capture in force before the latest one: the first US run.
	capturedAt, _ := time.Parse(time.RFC3339Nano, capture["captured_at"].(string))
	_, body = get(t, f.url+"/v1/charts/US?at="+capturedAt.Add(-time.Millisecond).Format(time.RFC3339Nano))
	if e := body["entries"].([]any)[0].(map[string]any); e["video_id"] != sample[0].Id {
		t.Errorf("US chart before the latest capture starts with %v, want %s", e["video_id"], sample[0].Id)
	}

	resp, body = get(t, f.url+"/v1/search?q="+strings.Fields(sample[3].Snippet.Title)[0]+"&limit=5")
	if resp.StatusCode != 200 || len(body["hits"].([]any)) == 0 {
		t.Errorf("search: %d %v", resp.StatusCode, body)
	}

	resp, body = get(t, f.url+"/v1/videos/"+sample[0].Id)
	if resp.StatusCode != 200 || body["video"].(map[string]any)["id"] != sample[0].Id || len(body["appearances"].([]any)) != 3 {
		t.Errorf("video: %d %v", resp.StatusCode, body)
	}

	resp, body = get(t, f.url+"/v1/runs?limit=2&region=US")
	runs := body["runs"].([]any)
	if resp.StatusCode != 200 || len(runs) != 2 {
		t.Fatalf("runs: %d %v", resp.StatusCode, body)
	}
	run := runs[0].(map[string]any)
	if run["region"] != "US" || run["outcome"] != "success" || run["reason"] != nil || run["retry_at"] != nil {
		t.Errorf("run shape: %v", run)
	}

	_, body = get(t, f.url+"/v1/quota")
	cred := body["credentials"].([]any)[0].(map[string]any)
	bucket := cred["buckets"].([]any)[0].(map[string]any)
	if cred["credential"] != "proj" || bucket["name"] != "units" || bucket["used"].(float64) < 3 {
		t.Errorf("quota: %v", body)
	}
	for _, k := range []string{"exhausted_until", "error"} {
		if v, ok := cred[k]; !ok || v != nil {
			t.Errorf("quota %s = %v (present %v), want null", k, v, ok)
		}
	}

	_, body = get(t, f.url+"/v1/regions")
	regs := body["regions"].([]any)
	if len(regs) != 2 || regs[1].(map[string]any)["next_run"] != nil {
		t.Errorf("regions: %v (an unknown next run must be null)", body)
	}

	resp, _ = get(t, f.url+"/healthz")
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
}

func TestBadRequestsAre400NamingTheParameter(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	for _, tc := range []struct {
		path, status, code, mentions string
	}{
		{"/v1/search?q=%22unbalanced", "400", "bad_query", "unbalanced"},
		{"/v1/search", "400", "bad_parameter", "q"},
		{"/v1/search?q=x&limit=0", "400", "bad_parameter", "limit"},
		{"/v1/runs?limit=100000", "400", "bad_parameter", "limit"},
		{"/v1/runs?region=XX", "400", "bad_parameter", "region"},
		{"/v1/charts/US?at=yesterday", "400", "bad_parameter", "at"},
		{"/v1/charts/US?kind=weekly", "400", "bad_parameter", "kind"},
		{"/v1/charts/JP", "404", "not_found", ""},
		{"/v1/videos/bad", "400", "bad_parameter", "video id"},
		{"/v1/videos/" + strings.Repeat("x", 12), "400", "bad_parameter", "video id"},
		{"/v1/videos/AAAAAAAAAAA", "404", "not_found", ""},
		{"/v1/search?q=x&cursor=0", "400", "bad_parameter", "cursor"},
		{"/v1/search?q=x&cursor=" + strconv.Itoa(store.MaxSearchLimit), "400", "bad_parameter", "same q"},
		{"/v1/runs?cursor=abc", "400", "bad_parameter", "cursor"},
		{"/v1/runs?region=XX&cursor=0", "400", "bad_parameter", "region"},
		{"/v1/nothing", "404", "not_found", "openapi"},
		{"/v1/search?q=" + strings.Repeat("x", MaxQueryBytes), "414", "query_too_long", ""},
	} {
		resp, body := get(t, f.url+tc.path)
		e, _ := body["error"].(map[string]any)
		if strconv.Itoa(resp.StatusCode) != tc.status || e == nil || e["code"] != tc.code || !strings.Contains(e["message"].(string), tc.mentions) {
			t.Errorf("%s: %d %v; want %s %s naming %q", tc.path[:min(len(tc.path), 60)], resp.StatusCode, body, tc.status, tc.code, tc.mentions)
		}
	}
}

// TestRateLimitPerClient: 60 requests a minute, then 429 with the counter's
// own Retry-After (the previous window's 60 requests still weigh 60 at the
// next window's start: one more second), never early.
func TestRateLimitPerClient(t *testing.T) {
	const retryAfter = 61
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	t0 := f.clk.Now()
	for i := 1; i <= 60; i++ {
		resp, _ := get(t, f.url+"/v1/regions")
		if resp.StatusCode != 200 || resp.Header.Get("RateLimit-Limit") != "60" ||
			resp.Header.Get("RateLimit-Remaining") != strconv.Itoa(60-i) || resp.Header.Get("RateLimit-Reset") == "" {
			t.Fatalf("request %d: %d, headers %v", i, resp.StatusCode, resp.Header)
		}
	}
	resp, body := get(t, f.url+"/v1/regions")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != strconv.Itoa(retryAfter) || body["error"].(map[string]any)["code"] != "rate_limited" {
		t.Fatalf("61st: %d Retry-After %q %v; want 429 with Retry-After %d", resp.StatusCode, resp.Header.Get("Retry-After"), body, retryAfter)
	}
	// One second before Retry-After: still limited; at it: admitted.
	f.clk.Set(t0.Add(time.Duration(retryAfter-1) * time.Second))
	if resp, _ := get(t, f.url+"/v1/regions"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a second early: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	f.clk.Set(t0.Add(time.Duration(retryAfter) * time.Second))
	if resp, _ := get(t, f.url+"/v1/regions"); resp.StatusCode != 200 {
		t.Errorf("at now + Retry-After: %d", resp.StatusCode)
	}
	// /healthz is not limited.
	if resp, _ := get(t, f.url+"/healthz"); resp.StatusCode != 200 || resp.Header.Get("RateLimit-Limit") != "" {
		t.Errorf("healthz: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestRateLimitBoundaryBurst is the seed article's boundary burst: a full
// burst just before and one just after a fixed window's boundary would
// admit 2x; the sliding-window counter admits exactly the limit.
func TestRateLimitBoundaryBurst(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	boundary := time.Date(2026, 3, 2, 12, 1, 0, 0, time.UTC)
	ok := 0
	for _, at := range []time.Time{boundary.Add(-100 * time.Millisecond), boundary.Add(100 * time.Millisecond)} {
		f.clk.Set(at)
		for range 60 {
			if resp, _ := get(t, f.url+"/v1/regions"); resp.StatusCode == 200 {
				ok++
			}
		}
	}
	if ok != 60 {
		t.Errorf("%d requests admitted across the boundary, want exactly 60", ok)
	}
}

func TestTokenIsRequiredWhenSet(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.Token = "s3cret-token-0123456789" })
	if resp, body := get(t, f.url+"/v1/runs"); resp.StatusCode != 401 || body["error"].(map[string]any)["code"] != "unauthorized" {
		t.Errorf("no token: %d %v", resp.StatusCode, body)
	}
	if resp, _ := get(t, f.url+"/v1/runs", "Authorization", "Bearer wrong"); resp.StatusCode != 401 {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, f.url+"/v1/runs", "Authorization", "Bearer s3cret-token-0123456789"); resp.StatusCode != 200 {
		t.Errorf("right token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, f.url+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("healthz needs no token: %d", resp.StatusCode)
	}
}

// TestOpenAPIDocumentsEveryRoute: the served openapi.yaml is a valid
// OpenAPI 3 document for a parser we did not write (kin-openapi), every
// route but the dashboard's files is documented, and every documented path
// answers (not 404/405).
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{} })
	resp, err := http.Get(f.url + "/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.yaml is not valid OpenAPI 3: %v", err)
	}
	documented := map[string]bool{}
	for p, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	for _, r := range Routes() {
		key := strings.TrimSuffix(r, "{$}")
		if key == "GET /" || key == "GET /favicon.ico" || strings.HasPrefix(key, "GET /dashboard.") {
			continue // the dashboard's files, not part of the API
		}
		if !documented[key] {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	param := regexp.MustCompile(`\{(\w+)\}`)
	sample := youtubetest.Sample()
	for key := range documented {
		path := strings.TrimPrefix(key, "GET ")
		path = param.ReplaceAllStringFunc(path, func(p string) string {
			if p == "{region}" {
				return "US"
			}
			return sample[0].Id
		})
		if path == "/v1/search" {
			path += "?q=video"
		}
		resp, err := http.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 404 || resp.StatusCode == 405 {
			t.Errorf("documented %s answers %d", key, resp.StatusCode)
		}
	}
}

// TestStalledClientIsDisconnected: a client that sends half a request line
// and stops does not hold a connection past the header timeout.
func TestStalledClientIsDisconnected(t *testing.T) {
	db, lim := shared(t)
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := NewServer(Handler(Options{Store: st, Log: zerolog.Nop()}), Timeouts{ReadHeader: 200 * time.Millisecond, Read: time.Second, Write: time.Second, Idle: time.Second}, time.Second, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /v1/runs HTTP/1.1\r\nHost: x\r\n") // never finished
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server still held the stalled connection after 10 s")
	}
	// A healthy client is served meanwhile.
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz while a client stalls: %v %v", resp, err)
	}
	resp.Body.Close()
	_ = lim
}

// TestInstancesShareABudgetThroughRedis: two serve instances whose
// counters use the same Redis count one client's requests together.
func TestInstancesShareABudgetThroughRedis(t *testing.T) {
	db, lim := shared(t)
	srv := redistest.Start(t)
	var urls []string
	for range 2 {
		client, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
		if err != nil {
			t.Fatal(err)
		}
		rl := NewRedisCounter(client, 10, time.Minute)
		t.Cleanup(func() { rl.Close() })
		f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{Limiter: rl, Limit: 10, Window: time.Minute, Key: "ip"} })
		urls = append(urls, f.url)
	}
	ok, limited := 0, 0
	for i := range 14 {
		resp, _ := get(t, urls[i%2]+"/v1/regions")
		switch resp.StatusCode {
		case 200:
			ok++
		case 429:
			limited++
			// At most the rest of this window plus the time the previous
			// window's weight takes to drop by one request: 60 + 60/10 s.
			if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 || ra > 66 {
				t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
		}
	}
	if ok != 10 || limited != 4 {
		t.Errorf("%d admitted and %d limited across two instances, want 10 and 4 (one budget per client)", ok, limited)
	}
}

// TestChartIsTheLatestCompleteCapture: while a run is storing a chart
// (a partial capture), /v1/charts answers the latest complete one unless
// partial=true asks for it (issue 21 item 6).
func TestChartIsTheLatestCompleteCapture(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "tf.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	videos := func(prefix string, n int) []store.Video {
		vs := make([]store.Video, n)
		for i := range vs {
			vs[i] = store.Video{ID: fmt.Sprintf("%s%010d", prefix, i), Title: prefix + " title"}
		}
		return vs
	}
	for i, n := range []int{4, 2} {
		run, err := st.StartRun(ctx, store.Run{Credential: "default", Region: "US", PID: 1, Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		when := at.Add(time.Duration(i) * time.Hour)
		if err := st.SaveSnapshot(ctx, store.Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: videos(string(rune('a'+i)), n), At: when}); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // the second run is still fetching: its capture stays partial
			if err := st.CompleteCapture(ctx, run, "US", store.KindChart, "", when); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := start(t, db, nil, nil)
	for _, tc := range []struct {
		query    string
		entries  int
		complete bool
	}{{"", 4, true}, {"?partial=false", 4, true}, {"?partial=true", 2, false}} {
		resp, body := get(t, f.url+"/v1/charts/US"+tc.query)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", tc.query, resp.StatusCode, body)
		}
		capture, _ := body["capture"].(map[string]any)
		if entries, _ := body["entries"].([]any); len(entries) != tc.entries || capture["complete"] != tc.complete {
			t.Errorf("/v1/charts/US%s: %d entries, complete %v; want %d, %v", tc.query, len(entries), capture["complete"], tc.entries, tc.complete)
		}
	}
	if resp, body := get(t, f.url+"/v1/charts/US?partial=yes"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("partial=yes: %d %v, want 400", resp.StatusCode, body)
	}
}

// TestRunsPageWithACursor: /v1/runs pages newest first; next_cursor leads
// to the next page and is null on the last (issue 31 item 16).
func TestRunsPageWithACursor(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{} })
	_, all := get(t, f.url+"/v1/runs")
	var want, got []float64
	for _, r := range all["runs"].([]any) {
		want = append(want, r.(map[string]any)["id"].(float64))
	}
	url := f.url + "/v1/runs?limit=1"
	for range len(want) + 1 {
		resp, body := get(t, url)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", url, resp.StatusCode, body)
		}
		for _, r := range body["runs"].([]any) {
			got = append(got, r.(map[string]any)["id"].(float64))
		}
		next, ok := body["next_cursor"]
		if !ok {
			t.Fatalf("no next_cursor key: %v", body)
		}
		if next == nil {
			break
		}
		url = f.url + "/v1/runs?limit=1&cursor=" + next.(string)
	}
	if len(want) < 3 || !slices.Equal(got, want) {
		t.Errorf("runs paged one at a time: %v, want %v", got, want)
	}
	if resp, _ := get(t, f.url+"/v1/runs?cursor=abc"); resp.StatusCode != 400 {
		t.Errorf("cursor=abc: %d, want 400", resp.StatusCode)
	}
}

// TestUpstreamTextIsBounded: a run failed on a 400 whose message is 7 MB;
// /v1/dashboard and /v1/runs carry at most store.MaxReasonBytes of it
// (issue 31 item 5).
func TestUpstreamTextIsBounded(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "tf.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		id, err := st.StartRun(ctx, store.Run{Credential: "default", Region: "US", PID: 1, Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		reason := "youtube: 400 Bad Request: " + strings.Repeat("x", 7<<20)
		if err := st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeFailed, Reason: reason}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	f := start(t, db, nil, func(o *Options) { o.Quota = nil })
	for _, path := range []string{"/v1/dashboard", "/v1/runs"} {
		resp, err := http.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct{ Runs []store.Run }
		if err := json.Unmarshal(raw, &body); resp.StatusCode != 200 || err != nil || len(body.Runs) != 3 || len(raw) > 64<<10 {
			t.Fatalf("%s: %d, %d bytes, %d runs (%v); want 200, 3 runs in under 64 KiB", path, resp.StatusCode, len(raw), len(body.Runs), err)
		}
		for _, r := range body.Runs {
			if len(r.Reason) > store.MaxReasonBytes || !strings.HasSuffix(r.Reason, store.ReasonCut) {
				t.Errorf("%s: run %d reason of %d bytes, want at most %d, marked cut", path, r.ID, len(r.Reason), store.MaxReasonBytes)
			}
		}
	}
}

// TestHeavyRequestsAreCappedPerClient: while a client has HeavyPerClient
// heavy requests running, its next one waits for its own slot (503 at the
// deadline), while another client's heavy requests and its own light ones
// are served at once (issue 31 item 4: one client's four streams of
// expensive searches slowed another client's dashboard 25-fold).
func TestHeavyRequestsAreCappedPerClient(t *testing.T) {
	db, lim := shared(t)
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newServer(Options{Store: st, Timeout: 20 * time.Second, Log: zerolog.Nop(),
		Quota: func(ctx context.Context) []quota.Status { return []quota.Status{lim.Status(ctx, "proj")} }})
	h := s.handler()
	const a, b = "192.0.2.1:40000", "192.0.2.2:40000"
	// Client a's requests give up after 300 ms (their own deadline); b's
	// have the server's, long enough for the race detector on a busy machine.
	serve := func(addr, path string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		if addr == a {
			ctx, cancel := context.WithTimeout(req.Context(), 300*time.Millisecond)
			defer cancel()
			req = req.WithContext(ctx)
		}
		req.RemoteAddr, req.Host = addr, "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	var releases []func()
	for range HeavyPerClient { // client a's heavy requests running
		release, err := s.acquire(context.Background(), clientKey(a, ""))
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	for _, path := range []string{"/v1/search?q=video", "/v1/dashboard", "/v1/charts/US"} {
		if code, body := serve(a, path); code != 503 || !strings.Contains(body, `"timeout"`) {
			t.Errorf("client a's %s beyond its %d heavy slots: %d %s; want 503 timeout", path, HeavyPerClient, code, body)
		}
		if code, body := serve(b, path); code != 200 {
			t.Errorf("client b's %s while a's slots are taken: %d %.200s", path, code, body)
		}
	}
	if code, _ := serve(a, "/v1/runs"); code != 200 {
		t.Errorf("client a's light request: %d", code)
	}
	for _, release := range releases {
		release()
	}
	if code, _ := serve(a, "/v1/search?q=video"); code != 200 {
		t.Errorf("client a's search after its slots were released: %d", code)
	}
	if n := len(s.clients); n != 0 {
		t.Errorf("%d clients' slots left after every request ended", n)
	}
}

// TestCORS: only the configured origins get Access-Control-Allow-Origin,
// and a preflight OPTIONS is answered 204 without token or rate limit
// (issue 31 item 16).
func TestCORS(t *testing.T) {
	db, lim := shared(t)
	const app = "https://app.example.org"
	for _, tc := range []struct {
		origins []string
		allowed bool
	}{{nil, false}, {[]string{app}, true}, {[]string{"https://other.example.org"}, false}} {
		f := start(t, db, lim, func(o *Options) { o.CORSOrigins = tc.origins; o.Token = "s3cret-token-0123456789" })
		req, _ := http.NewRequest("OPTIONS", f.url+"/v1/search?q=x", nil)
		req.Header.Set("Origin", app)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 204 || (h.Get("Access-Control-Allow-Origin") == app) != tc.allowed ||
			(tc.allowed && (!strings.Contains(h.Get("Access-Control-Allow-Methods"), "GET") || !strings.EqualFold(h.Get("Access-Control-Allow-Headers"), "Authorization"))) {
			t.Errorf("origins %v: preflight %d %v; want 204, allowed %v", tc.origins, resp.StatusCode, h, tc.allowed)
		}
		resp, _ = get(t, f.url+"/v1/regions", "Origin", app, "Authorization", "Bearer s3cret-token-0123456789")
		if resp.StatusCode != 200 || (resp.Header.Get("Access-Control-Allow-Origin") == app) != tc.allowed ||
			(tc.allowed && !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After")) {
			t.Errorf("origins %v: GET %d %v; want 200, allowed %v", tc.origins, resp.StatusCode, resp.Header, tc.allowed)
		}
	}
}

// TestSearchPagesWithACursor: /v1/search's next_cursor leads through the
// hits of one big page, a page at a time, and is null on the last
// (issue 31 item 16).
func TestSearchPagesWithACursor(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{} })
	ids := func(body map[string]any) (out []string) {
		for _, h := range body["hits"].([]any) {
			out = append(out, h.(map[string]any)["video_id"].(string))
		}
		return out
	}
	_, body := get(t, f.url+"/v1/search?q=video&limit=100")
	all := ids(body)
	var got []string
	url := f.url + "/v1/search?q=video&limit=7"
	for range len(all) + 1 {
		resp, body := get(t, url)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", url, resp.StatusCode, body)
		}
		got = append(got, ids(body)...)
		next, ok := body["next_cursor"]
		if !ok {
			t.Fatalf("no next_cursor key: %v", body)
		}
		if next == nil {
			break
		}
		url = f.url + "/v1/search?q=video&limit=7&cursor=" + next.(string)
	}
	if len(all) < 15 || !slices.Equal(got, all) {
		t.Errorf("search paged 7 at a time: %d hits %v, want the %d of one page %v", len(got), got, len(all), all)
	}
}
