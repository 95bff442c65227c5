// Package serve is trendfetch's read API and operator dashboard (`trendfetch
// serve`, `trendfetch schedule --serve`; docs/design.md §8): JSON under /v1/ in
// the same snake_case shapes as the CLI's --json, an OpenAPI 3 description
// at /v1/openapi.yaml, /healthz, /metrics and the dashboard at /. Nothing it
// serves spends upstream quota or writes the store.
//
// Start at Handler (routes and what guards them: Host check, security
// headers, bearer token, per-client rate limit, a deadline per request,
// bounded concurrent heavy queries) and NewServer/LimitListener (timeouts
// and connection caps). Rate limiters are in ratelimit.go: the
// sliding-window counter (memory or Redis, ratelimit.lua) by default, or
// the exact sliding-window log of internal/quota. What serve bounds and the
// headers it sends are listed in docs/api.md ("What serve bounds").
package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/sqlitedb"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Limits of request parameters. Search limits are the store's
// (store.DefaultSearchLimit, store.MaxSearchLimit), as in the CLI.
const (
	// DefaultLimit is the number of runs listed when limit is not given.
	DefaultLimit = 20
	// MaxLimit is the largest accepted limit of /v1/runs.
	MaxLimit = 200
	// MaxQueryBytes bounds the raw query string of a request.
	MaxQueryBytes = 2048
	// MaxResponseBytes bounds every JSON answer: one that would be longer
	// is not sent (500 response_too_large). Within it, each
	// endpoint's own bounds are in openapi.yaml (run reasons are at most
	// store.MaxReasonBytes).
	MaxResponseBytes = 4 << 20
	// DashboardRuns and DashboardEntries are the runs and chart entries
	// per region in /v1/dashboard.
	DashboardRuns    = 10
	DashboardEntries = 20
)

// DefaultTimeout is a request's deadline when Options.Timeout is 0.
const DefaultTimeout = config.DefaultServeTimeout

// SecurityHeaders are sent with every response: the dashboard is
// self-contained (no inline script or style, no framing), answers are never
// MIME-sniffed and no page leaks its URL to another site.
var SecurityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
}

// Region is one configured region as GET /v1/regions shows it.
type Region struct {
	// Region is the code (regionCode), Name its English short name.
	Region string `json:"region"`
	Name   string `json:"name"`
	// Schedule describes when it runs ("every 2h0m0s +3m0s" or a cron spec).
	Schedule string `json:"schedule"`
	// NextRun is the next scheduled run (UTC), null when unknown.
	NextRun *time.Time `json:"next_run"`
	// Interval is the time between its runs after NextRun (0: unknown);
	// /v1/dashboard flags a region late past twice it.
	Interval time.Duration `json:"-"`
}

// RateLimit configures per-client rate limiting of /v1/.
type RateLimit struct {
	// Limiter decides per client (NewCounter, NewRedisCounter, NewLog); nil
	// means no limit.
	Limiter Limiter
	// Limit is the requests per Window (for the RateLimit-Limit header and
	// messages).
	Limit  int64
	Window time.Duration
	// Key is "ip" (the connection's address, IPv6 by /64; proxies' headers
	// are not trusted) or "token" (the bearer token, hashed: never stored).
	// Failed tokens always count against the address.
	Key string
}

// Options are what the server reads from. Store is required; the rest may
// be nil.
type Options struct {
	// Store is the database, opened read-only.
	Store store.Backend
	// Quota returns the status of every configured credential.
	Quota func(ctx context.Context) []quota.Status
	// Regions returns the configured regions with their next run after now.
	Regions func(now time.Time) []Region
	// Metrics serves /metrics (Prometheus); nil answers 404.
	Metrics http.Handler
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz and the dashboard's files (compared in
	// constant time; the scheme is case-insensitive).
	Token string
	// RateLimit limits /v1/ per client; a nil Limiter means no limit.
	RateLimit RateLimit
	// Timeout is each request's deadline (0: DefaultTimeout); its database
	// work is cancelled then and the answer is 503.
	Timeout time.Duration
	// Hosts are the Host names accepted besides loopback names and IP
	// addresses (serve.hosts); others get 421.
	Hosts []string
	// CORSOrigins are the origins (scheme://host[:port]) whose browser
	// apps may read the answers (serve.cors_origins; none by default):
	// a request with one of them in its Origin header gets
	// Access-Control-Allow-Origin, and its preflight (OPTIONS) is allowed
	// GET with an Authorization header.
	CORSOrigins []string
	// Now is the clock of next-run times (default time.Now).
	Now func() time.Time
	Log zerolog.Logger
}

// HeavyPerClient is how many heavy requests (search, chart, video,
// dashboard) of one client (the rate limit's key: address or token) run
// at once; its others wait for a slot of its own, until their deadline
// (503). One client's streams of expensive searches then take at most
// this many of the server's heavy slots and cores, whatever its rate limit
// allows: other clients' requests keep theirs.
const HeavyPerClient = 1

type server struct {
	o Options
	// heavy holds a slot per running heavy request (search, chart, video,
	// dashboard): half the store's connections, so that heavy requests can
	// never take every connection and /healthz and light requests still
	// get one.
	heavy chan struct{}
	// clients holds each client's HeavyPerClient slots (taken before a
	// slot of heavy, so that a waiting client holds none).
	clients clientSlots
}

// clientSlots are the heavy slots of each client with a heavy request
// running or waiting.
type clientSlots struct {
	mu sync.Mutex
	m  map[string]*clientSlot
}

type clientSlot struct {
	ch    chan struct{}
	users int // requests running or waiting: the entry goes at 0
}

// acquire waits for a slot of client until ctx is done; release gives it
// back.
func (c *clientSlots) acquire(ctx context.Context, client string) (release func(), err error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*clientSlot{}
	}
	cs := c.m[client]
	if cs == nil {
		cs = &clientSlot{ch: make(chan struct{}, HeavyPerClient)}
		c.m[client] = cs
	}
	cs.users++
	c.mu.Unlock()
	done := func() {
		c.mu.Lock()
		if cs.users--; cs.users == 0 {
			delete(c.m, client)
		}
		c.mu.Unlock()
	}
	select {
	case cs.ch <- struct{}{}:
		return func() { <-cs.ch; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

//go:embed openapi.yaml dashboard.html dashboard.js dashboard.css favicon.ico
var assets embed.FS

// access says what guards a route.
type access int

const (
	// public: no token, no rate limit (health and the dashboard's files,
	// which hold no data).
	public access = iota
	// private: the token when one is set.
	private
	// api: the token and the per-client rate limit.
	api
)

type route struct {
	pattern string
	handler http.HandlerFunc
	access  access
	// heavy routes take a slot of server.heavy.
	heavy bool
}

// routes is the route table.
func (s *server) routes() []route {
	return []route{
		{"GET /healthz", s.healthz, public, false},
		{"GET /{$}", s.asset("dashboard.html", "text/html; charset=utf-8"), public, false},
		{"GET /dashboard.js", s.asset("dashboard.js", "text/javascript; charset=utf-8"), public, false},
		{"GET /dashboard.css", s.asset("dashboard.css", "text/css; charset=utf-8"), public, false},
		{"GET /favicon.ico", s.asset("favicon.ico", "image/x-icon"), public, false},
		{"GET /metrics", s.metrics, private, false},
		{"GET /v1/openapi.yaml", s.openapi, api, false},
		{"GET /v1/dashboard", s.dashboard, api, true},
		{"GET /v1/search", s.search, api, true},
		{"GET /v1/charts/{region}", s.chart, api, true},
		{"GET /v1/videos/{id}", s.video, api, true},
		{"GET /v1/runs", s.runs, api, false},
		{"GET /v1/quota", s.quota, api, false},
		{"GET /v1/regions", s.regions, api, false},
	}
}

// Handler returns the HTTP handler of the API and the dashboard.
func Handler(o Options) http.Handler { return newServer(o).handler() }

func newServer(o Options) *server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	slots := 1
	if o.Store != nil {
		slots = max(1, o.Store.MaxOpenConns()/2)
	}
	return &server{o: o, heavy: make(chan struct{}, slots)}
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	methods := map[string][]string{}
	var paths []string
	for _, r := range s.routes() {
		mux.Handle(r.pattern, s.guard(r))
		method, path, _ := strings.Cut(r.pattern, " ")
		if methods[path] == nil {
			paths = append(paths, path)
		}
		methods[path] = append(methods[path], method)
	}
	// Other methods on a known path: 405 with Allow (OPTIONS is answered
	// by outer).
	for _, path := range paths {
		allow := strings.Join(append(methods[path], "HEAD", "OPTIONS"), ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "this path answers "+allow)
		})
	}
	mux.Handle("/v1/", s.guard(route{handler: func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint (see /v1/openapi.yaml)")
	}, access: api}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such page (the API is under /v1/, see /v1/openapi.yaml)")
	})
	return s.outer(mux)
}

// outer applies what every request gets: the security headers, the Host
// check, the query size bound and the deadline.
func (s *server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range SecurityHeaders {
			w.Header().Set(k, v)
		}
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, "unknown_host",
				"this server does not answer for that Host name: add it to serve.hosts, or use 127.0.0.1 or localhost")
			return
		}
		if s.cors(w, r) {
			return
		}
		if len(r.URL.RawQuery) > MaxQueryBytes {
			writeError(w, http.StatusRequestURITooLong, "query_too_long", fmt.Sprintf("the query string is longer than %d bytes", MaxQueryBytes))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.o.Timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// cors adds the CORS headers for an allowed Origin and answers OPTIONS
// (a CORS preflight or not) with 204; it reports whether it answered.
func (s *server) cors(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	allowed := false
	if len(s.o.CORSOrigins) > 0 {
		h.Add("Vary", "Origin")
		if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(s.o.CORSOrigins, origin) {
			allowed = true
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After")
		}
	}
	if r.Method != http.MethodOptions {
		return false
	}
	h.Set("Allow", "GET, HEAD, OPTIONS")
	if allowed {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD")
		h.Set("Access-Control-Allow-Headers", "Authorization")
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}

// hostAllowed reports whether the Host header names this server: empty
// (HTTP/1.0), an IP address, a loopback name or one of Options.Hosts.
// Any other name may be a DNS rebinding attack from a web page.
func (s *server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	return host == "" || net.ParseIP(host) != nil || IsLoopbackHost(host) || slices.Contains(s.o.Hosts, host)
}

// bearer returns the token of an "Authorization: Bearer <token>" header;
// the scheme is case-insensitive (RFC 7235).
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// guard applies a route's access (token, rate limit) and heavy slot.
func (s *server) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenKey := ""
		if rt.access != public && s.o.Token != "" {
			tok, _ := bearer(r)
			if subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.Token)) != 1 {
				// A wrong token costs the address a request, so that
				// guessing is rate-limited too.
				if !s.admit(w, r, clientKey(r.RemoteAddr, "")) {
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="trendfetch"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token> (the token in serve.token_file)")
				return
			}
			authenticated(r)
			if s.o.RateLimit.Key == "token" {
				sum := sha256.Sum256([]byte(tok))
				tokenKey = hex.EncodeToString(sum[:8])
			}
		}
		client := clientKey(r.RemoteAddr, tokenKey)
		if rt.access == api && !s.admit(w, r, client) {
			return
		}
		if rt.heavy {
			release, err := s.clients.acquire(r.Context(), client)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			defer release()
			select {
			case s.heavy <- struct{}{}:
				defer func() { <-s.heavy }()
			case <-r.Context().Done():
				s.fail(w, r, r.Context().Err())
				return
			}
		}
		rt.handler(w, r)
	})
}

// admit counts one request of client; over the limit it answers 429 and
// returns false. A limiter that cannot decide lets the request through
// (logged): a down backend must not take the read API down.
func (s *server) admit(w http.ResponseWriter, r *http.Request, client string) bool {
	rl := s.o.RateLimit
	if rl.Limiter == nil {
		return true
	}
	d, err := rl.Limiter.Allow(r.Context(), client)
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("rate limiter unavailable: request served unmetered")
		return true
	}
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.FormatInt(rl.Limit, 10))
	h.Set("RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
	if !d.Allowed {
		secs := ceilSeconds(d.RetryAfter)
		h.Set("RateLimit-Reset", strconv.FormatInt(secs, 10))
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, http.StatusTooManyRequests, "rate_limited",
			fmt.Sprintf("more than %d requests in %s from this client; retry after %d s", rl.Limit, rl.Window, secs))
		return false
	}
	h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(rl.Window), 10))
	return true
}

// ceilSeconds rounds d up to whole seconds (never early).
func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

// Health is the body of /healthz, here and on the scheduler's
// --metrics-addr: Status "ok" (200) or "unavailable" (503) with Error.
type Health struct {
	Status string    `json:"status"`
	Error  *APIError `json:"error"`
}

// WriteHealth answers /healthz: 200 {"status":"ok","error":null} when err
// is nil, else 503 with the error under code "unavailable".
func WriteHealth(w http.ResponseWriter, err error) {
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "unavailable", Error: &APIError{Code: "unavailable", Message: err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// healthz reads the newest run: a real query on the data, so that a
// database the server cannot read is reported here too.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	_, err := s.o.Store.RunsPage(r.Context(), store.RunsQuery{Limit: 1})
	if err != nil && r.Context().Err() == nil {
		s.o.Log.Error().Err(err).Msg("health check: the database cannot be read")
	}
	WriteHealth(w, err)
}

func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		writeError(w, http.StatusNotFound, "not_found", "no metrics here")
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
}

// openAPI is openapi.yaml with the limits declared in Go filled in.
var openAPI = func() []byte {
	b, err := assets.ReadFile("openapi.yaml")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	n := strconv.Itoa
	return []byte(strings.NewReplacer(
		"${MAX_SEARCH_LIMIT}", n(store.MaxSearchLimit), "${DEFAULT_SEARCH_LIMIT}", n(store.DefaultSearchLimit),
		"${MAX_LIMIT}", n(MaxLimit), "${DEFAULT_LIMIT}", n(DefaultLimit),
		"${DASHBOARD_RUNS}", n(DashboardRuns), "${DASHBOARD_ENTRIES}", n(DashboardEntries),
		"${HEAVY_PER_CLIENT}", n(HeavyPerClient), "${MAX_RESPONSE_BYTES}", n(MaxResponseBytes),
		"${SEARCH_CANDIDATES}", n(store.SearchCandidates), "${MAX_REASON_BYTES}", n(store.MaxReasonBytes),
	).Replace(string(b)))
}()

func (s *server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPI)
}

func (s *server) asset(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile(name)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		if name == "favicon.ico" { // never changes
			w.Header().Set("Cache-Control", "public, max-age=604800")
		}
		w.Write(b)
	}
}

// limitParam reads the limit parameter: def when absent, else 1..maxLimit.
func limitParam(r *http.Request, def, maxLimit int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, &paramError{"limit", fmt.Sprintf("limit=%q: want a whole number 1-%d", clip(v), maxLimit)}
	}
	return n, nil
}

// regionParam reads an optional region code.
func regionParam(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	code, err := regions.Parse(v)
	if err != nil {
		return "", &paramError{"region", "region=" + strconv.Quote(clip(v)) + ": " + err.Error()}
	}
	return code, nil
}

// paramError is a bad request parameter: 400 naming it.
type paramError struct{ param, msg string }

func (e *paramError) Error() string { return e.msg }

// clip shortens a value echoed in a message.
func clip(s string) string { return termtext.Clip(s, 64) }

func (s *server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	text := strings.TrimSpace(q.Get("q"))
	if text == "" {
		s.fail(w, r, &paramError{"q", "q is required: the search text"})
		return
	}
	limit, err := limitParam(r, store.DefaultSearchLimit, store.MaxSearchLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	region, err := regionParam(q.Get("region"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	offset := 0
	if c := q.Get("cursor"); c != "" {
		if offset, err = strconv.Atoi(c); err != nil || offset < 1 || offset >= store.MaxSearchLimit {
			s.fail(w, r, &paramError{"cursor", fmt.Sprintf("cursor=%q: want the next_cursor of the previous page (with the same q)", clip(c))})
			return
		}
	}
	hits, next, err := s.o.Store.SearchPage(r.Context(), store.SearchQuery{Text: text, Region: region, Limit: limit, Offset: offset})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var cursor *string
	if next > 0 {
		c := strconv.Itoa(next)
		cursor = &c
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": text, "hits": nonNil(hits), "next_cursor": cursor})
}

func (s *server) chart(w http.ResponseWriter, r *http.Request) {
	region, err := regionParam(r.PathValue("region"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	cq := store.CaptureQuery{Region: region, Kind: q.Get("kind"), Query: q.Get("query")}
	switch p := q.Get("partial"); p {
	case "", "false":
	case "true":
		cq.Partial = true
	default:
		s.fail(w, r, &paramError{"partial", fmt.Sprintf("partial=%q: want true or false", clip(p))})
		return
	}
	switch cq.Kind {
	case "", store.KindChart, store.KindCategory, store.KindSearch:
	default:
		s.fail(w, r, &paramError{"kind", fmt.Sprintf("kind=%q: want chart, category or search", clip(cq.Kind))})
		return
	}
	if at := q.Get("at"); at != "" {
		t, err := store.ParseAt(at)
		if err != nil {
			s.fail(w, r, &paramError{"at", fmt.Sprintf("at=%q: %v", clip(at), err)})
			return
		}
		cq.At = t
	}
	c, entries, err := s.o.Store.CaptureAt(r.Context(), cq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if entries == nil {
		entries = []store.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"capture": c, "entries": entries})
}

func (s *server) video(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !store.IsVideoID(id) {
		s.fail(w, r, &paramError{"id", fmt.Sprintf("id %q: want a video id, 11 characters of A-Z a-z 0-9 _ -", clip(id))})
		return
	}
	h, err := s.o.Store.History(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *server) runs(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, DefaultLimit, MaxLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	region, err := regionParam(q.Get("region"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var before int64
	if c := q.Get("cursor"); c != "" {
		if before, err = strconv.ParseInt(c, 10, 64); err != nil || before < 1 {
			s.fail(w, r, &paramError{"cursor", fmt.Sprintf("cursor=%q: want the next_cursor of the previous page", clip(c))})
			return
		}
	}
	out, err := s.o.Store.RunsPage(r.Context(), store.RunsQuery{Region: region, Before: before, Limit: limit + 1})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var next *string
	if len(out) > limit {
		out = out[:limit]
		c := strconv.FormatInt(out[limit-1].ID, 10)
		next = &c
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": nonNil(out), "next_cursor": next})
}

// nonNil returns s, or an empty slice for nil (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *server) credentials(ctx context.Context) []quota.StatusView {
	views := []quota.StatusView{}
	if s.o.Quota != nil {
		for _, st := range s.o.Quota(ctx) {
			views = append(views, st.View())
		}
	}
	return views
}

func (s *server) quota(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"credentials": s.credentials(r.Context())})
}

func (s *server) configuredRegions() []Region {
	out := []Region{}
	if s.o.Regions != nil {
		out = append(out, s.o.Regions(s.o.Now())...)
	}
	return out
}

func (s *server) regions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"regions": s.configuredRegions()})
}

// fail answers err: 400 for a bad parameter or search syntax, 404 for
// nothing found, 503 when the request's deadline passed, nothing when the
// client went away, 500 otherwise (logged; the message is generic).
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var pe *paramError
	var qe *store.QueryError
	switch ctxErr := r.Context().Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		s.o.Log.Warn().Str("path", r.URL.Path).Dur("timeout", s.o.Timeout).Msg("request cancelled at its deadline")
		writeError(w, http.StatusServiceUnavailable, "timeout",
			fmt.Sprintf("the request took longer than serve.timeout (%s) and was cancelled: ask for less (a smaller limit, longer words), or retry later", s.o.Timeout))
	case ctxErr != nil:
		// the client went away: its work is cancelled, nobody to answer
	case errors.As(err, &pe):
		writeError(w, http.StatusBadRequest, "bad_parameter", pe.msg)
	case errors.As(err, &qe):
		writeError(w, http.StatusBadRequest, "bad_query", "q: "+qe.Error())
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case sqlitedb.Transient(err):
		// A writer was rebuilding the WAL index this read-only reader
		// cannot write: nothing was read; the same request succeeds a
		// moment later.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "busy", "the database was being opened by a writer; retry in a second")
	default:
		s.o.Log.Error().Err(err).Str("path", r.URL.Path).Msg("request failed")
		writeError(w, http.StatusInternalServerError, "internal", "internal error (logged by the server)")
	}
}

// APIError is the body of every error answer: {"error": {"code",
// "message"}}.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError writes {"error": {"code", "message"}}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": APIError{Code: code, Message: msg}})
}

// writeJSON writes v as the answer, or 500 response_too_large when its
// encoding exceeds MaxResponseBytes.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil || b.Len() > MaxResponseBytes {
		b.Reset()
		status = http.StatusInternalServerError
		e := APIError{Code: "response_too_large", Message: fmt.Sprintf("the answer would be larger than %d bytes: ask for less (a smaller limit)", MaxResponseBytes)}
		if err != nil {
			e = APIError{Code: "internal", Message: "internal error: the answer cannot be encoded"}
		}
		json.NewEncoder(&b).Encode(map[string]any{"error": e})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
