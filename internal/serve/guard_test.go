package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/store"
)

func getHost(t *testing.T, url, host string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestHostHeaderIsChecked (issue 21.2): a DNS rebinding page sends its own
// name as Host; only loopback names, IP addresses and serve.hosts are
// answered.
func TestHostHeaderIsChecked(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.Hosts = []string{"trends.example.org"} })
	for host, want := range map[string]int{
		"attacker.example":           421,
		"attacker.example:8080":      421,
		"127.0.0.1.attacker.example": 421,
		"localhost:8080":             200,
		"LOCALHOST.":                 200,
		"app.localhost":              200,
		"127.0.0.1:8080":             200,
		"[::1]:8080":                 200,
		"192.0.2.7":                  200,
		"trends.example.org":         200,
		"Trends.Example.Org:443":     200,
	} {
		for _, path := range []string{"/v1/regions", "/healthz", "/"} {
			if resp := getHost(t, f.url+path, host); resp.StatusCode != want {
				t.Errorf("Host %q %s: %d, want %d", host, path, resp.StatusCode, want)
			}
		}
	}
}

// TestSecurityHeadersOnEveryResponse (issue 21.4, 21.16): every answer,
// errors included, carries the security headers; a 404 does not echo the
// path; another method gets 405 with Allow.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	for _, path := range []string{"/", "/dashboard.js", "/healthz", "/v1/regions", "/v1/nothing/<script>", "/nothing", "/v1/charts/US?at=bad"} {
		resp := getHost(t, f.url+path, "")
		for k, v := range SecurityHeaders {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
	if csp := SecurityHeaders["Content-Security-Policy"]; !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	resp, body := get(t, f.url+"/v1/no-such-thing-xyzzy")
	if resp.StatusCode != 404 || strings.Contains(body["error"].(map[string]any)["message"].(string), "xyzzy") {
		t.Errorf("404 echoes the path: %v", body)
	}
	for _, path := range []string{"/v1/runs", "/v1/charts/US", "/healthz", "/"} {
		req, _ := http.NewRequest("POST", f.url+path, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" || !json.Valid(raw) {
			t.Errorf("POST %s: %d Allow %q %s; want 405 with Allow: GET, HEAD, OPTIONS", path, resp.StatusCode, resp.Header.Get("Allow"), raw)
		}
	}
}

// TestWrongTokensCountAgainstTheRateLimit (issue 21.4): guessing tokens is
// rate-limited like requests; the Bearer scheme is case-insensitive.
func TestWrongTokensCountAgainstTheRateLimit(t *testing.T) {
	db, lim := shared(t)
	const token = "s3cret-token-0123456789"
	f := start(t, db, lim, func(o *Options) { o.Token = token })
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		if resp, _ := get(t, f.url+"/v1/regions", "Authorization", scheme+" "+token); resp.StatusCode != 200 {
			t.Errorf("%s scheme: %d", scheme, resp.StatusCode)
		}
	}
	var codes []int
	for i := range 60 {
		resp, _ := get(t, f.url+"/v1/regions", "Authorization", "Bearer wrong-"+strconv.Itoa(i))
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != 401 || codes[len(codes)-1] != 429 {
		t.Errorf("60 wrong tokens after 3 requests from one address (limit 60): first %d, last %d; want 401 then 429", codes[0], codes[len(codes)-1])
	}
	if resp, _ := get(t, f.url+"/v1/regions", "Authorization", "Bearer "+token); resp.StatusCode != 429 {
		t.Errorf("right token from the same address after the guesses: %d, want 429 (ip limit)", resp.StatusCode)
	}
}

// TestChartAtTakesTheCLIDates (issue 21.16): ?at= accepts what chart --at
// accepts: an RFC 3339 time or a date.
func TestChartAtTakesTheCLIDates(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	today := time.Now().UTC().Format(time.DateOnly)
	// RFC 3339 in whole seconds: a second ahead, so that it is not before a
	// capture the shared store made in this same second.
	for _, at := range []string{today, time.Now().UTC().Add(time.Second).Format(time.RFC3339)} {
		if resp, body := get(t, f.url+"/v1/charts/US?at="+at); resp.StatusCode != 200 {
			t.Errorf("at=%s: %d %v", at, resp.StatusCode, body)
		}
	}
}

// TestSearchLimitIsTheStoreBound (issue 21.16): the API's search limit is
// the CLI's (store.MaxSearchLimit).
func TestSearchLimitIsTheStoreBound(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, nil)
	for limit, want := range map[int]int{store.MaxSearchLimit: 200, store.MaxSearchLimit + 1: 400} {
		if resp, body := get(t, f.url+"/v1/search?q=video&limit="+strconv.Itoa(limit)); resp.StatusCode != want {
			t.Errorf("limit=%d: %d %v, want %d", limit, resp.StatusCode, body, want)
		}
	}
}

// TestHealthzReadsTheData (issue 21.5): /healthz runs a real query, so a
// database whose pages cannot be read is reported (503), not "ok".
func TestHealthzReadsTheData(t *testing.T) {
	db, _ := filledStore(t)
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(Handler(Options{Store: st, Log: zerolog.Nop()}))
	defer srv.Close()
	resp, body := get(t, srv.URL+"/healthz")
	if resp.StatusCode != 200 || body["status"] != "ok" || body["error"] != nil {
		t.Fatalf("healthz: %d %v", resp.StatusCode, body)
	}
	if resp, body := get(t, srv.URL+"/metrics"); resp.StatusCode != 404 || body["error"].(map[string]any)["message"] != "no metrics here" {
		t.Errorf("/metrics without Options.Metrics: %d %v, want 404 not_found", resp.StatusCode, body)
	}
	// Overwrite every page after the first (the schema) with garbage.
	fh, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := fh.Stat()
	if _, err := fh.WriteAt(bytes.Repeat([]byte{0xA5}, int(fi.Size())-4096), 4096); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	resp, body = get(t, srv.URL+"/healthz")
	if e, _ := body["error"].(map[string]any); resp.StatusCode != 503 || body["status"] != "unavailable" || e == nil {
		t.Errorf("healthz on a damaged database: %d %v, want 503 unavailable", resp.StatusCode, body)
	}
}

// TestIPv6ClientsAreKeyedBy64 (issue 22.2): one /64 is one client.
func TestIPv6ClientsAreKeyedBy64(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"[2001:db8:1:2::1]:5000", "[2001:db8:1:2:ffff:ffff:ffff:ffff]:6000"},
		{"192.0.2.1:1", "192.0.2.1:2"},
	} {
		if ka, kb := clientKey(tc.a, ""), clientKey(tc.b, ""); ka != kb {
			t.Errorf("%s and %s: keys %q and %q, want one", tc.a, tc.b, ka, kb)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"[2001:db8:1:2::1]:5000", "[2001:db8:1:3::1]:5000"},
		{"192.0.2.1:1", "192.0.2.2:1"},
	} {
		if ka, kb := clientKey(tc.a, ""), clientKey(tc.b, ""); ka == kb {
			t.Errorf("%s and %s share key %q", tc.a, tc.b, ka)
		}
	}
	// Through the handler: a /64 spends one budget.
	rl := NewCounter(3, time.Minute, nil)
	h := Handler(Options{Store: nil, RateLimit: RateLimit{Limiter: rl, Limit: 3, Window: time.Minute, Key: "ip"}, Log: zerolog.Nop()})
	codes := ""
	for i := range 4 {
		req := httptest.NewRequest("GET", "/v1/regions", nil)
		req.RemoteAddr = "[2001:db8:1:2::" + strconv.Itoa(i+1) + "]:4000"
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes += strconv.Itoa(rec.Code) + " "
	}
	if codes != "200 200 200 429 " {
		t.Errorf("4 addresses of one /64 at 3 a minute: %s", codes)
	}
}

// TestConnectionsAreCapped (issue 21.3): connections over the per-address
// cap are answered 503 and closed; connections without the token are closed
// after the short idle time while one with the token stays.
func TestConnectionsAreCapped(t *testing.T) {
	db, _ := shared(t)
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const token = "s3cret-token-0123456789"
	log := zerolog.Nop()
	srv := NewServer(Handler(Options{Store: st, Token: token, Log: log}),
		Timeouts{ReadHeader: time.Second, Read: time.Second, Write: time.Second, Idle: 10 * time.Second, IdleAnonymous: 300 * time.Millisecond},
		time.Second, log)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(LimitListener(raw, 100, 3))
	defer srv.Close()
	addr := raw.Addr().String()

	// request sends one keep-alive request on c and reads the status.
	request := func(c net.Conn, br *bufio.Reader, auth string) int {
		t.Helper()
		io.WriteString(c, "GET /v1/regions HTTP/1.1\r\nHost: 127.0.0.1\r\n"+auth+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns, readers = append(conns, c), append(readers, bufio.NewReader(c))
	}
	if code := request(conns[0], readers[0], "Authorization: Bearer "+token+"\r\n"); code != 200 {
		t.Fatalf("with the token: %d", code)
	}
	if code := request(conns[1], readers[1], ""); code != 401 {
		t.Fatalf("without the token: %d", code)
	}
	// The fourth connection from this address: 503, closed.
	c4, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	c4.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c4), nil); err != nil || resp.StatusCode != 503 {
		t.Fatalf("4th connection from one address: %v %v, want 503", resp, err)
	}
	// After the anonymous idle time the connection without the token is
	// closed by the server; the one with the token is still served.
	time.Sleep(time.Second)
	conns[1].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := readers[1].ReadByte(); err != io.EOF {
		t.Errorf("anonymous idle connection after 1 s: %v, want EOF (closed by the server)", err)
	}
	if code := request(conns[0], readers[0], "Authorization: Bearer "+token+"\r\n"); code != 200 {
		t.Errorf("authenticated idle connection after 1 s: %d", code)
	}
	// The closed connection no longer counts: a new one is served.
	c5, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c5.Close()
	if code := request(c5, bufio.NewReader(c5), ""); code != 401 {
		t.Errorf("a connection after one of three closed: %d, want 401 (served)", code)
	}
}

// TestHTTPErrorLogIsJSON (issue 21.3): net/http's own error lines (here a
// handler panic) reach the structured log as JSON.
func TestHTTPErrorLogIsJSON(t *testing.T) {
	var logBuf syncBuffer
	log := zerolog.New(&logBuf)
	srv := NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), DefaultTimeouts, time.Second, log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(LimitListener(ln, 10, 10))
	defer srv.Close()
	if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logBuf.String(), "boom") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	for _, line := range lines {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %.200s", line)
		}
	}
	if !strings.Contains(logBuf.String(), `"source":"net/http"`) || !strings.Contains(logBuf.String(), "boom") {
		t.Errorf("net/http's error log did not reach the logger:\n%.500s", logBuf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
