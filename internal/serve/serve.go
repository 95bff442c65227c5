// Package serve is trendfetch's read API and operator dashboard (`trendfetch
// serve`, `trendfetch schedule --serve`; docs/design.md §8): JSON under /v1/ in
// the CLI's --json shapes, /v1/openapi.yaml, /healthz, /metrics and the
// dashboard at /. Nothing it serves spends upstream quota or writes the store.
// What it bounds and the headers it sends are in docs/api.md ("What serve bounds").
package serve

import (
	"bytes"
	"cmp"
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
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/duration"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
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
	// MaxResponseBytes bounds every JSON answer (else 500 response_too_large).
	MaxResponseBytes = 4 << 20
	// DashboardRuns and DashboardEntries are the runs and chart entries
	// per region in /v1/dashboard.
	DashboardRuns    = 10
	DashboardEntries = 20
	// MaxCoverageSince is the longest period GET /v1/coverage lists.
	MaxCoverageSince = 31 * 24 * time.Hour
	// HeavyPerClient is how many heavy requests (search, chart, video, dashboard)
	// of one client run at once; the others wait until their deadline (503).
	HeavyPerClient = 1
)

// SecurityHeaders are sent with every response (docs/api.md, "What serve bounds").
var SecurityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
}

// Region is a region as GET /v1/regions shows it: its code, English name,
// schedule ("every 2h0m0s +3m0s" or a cron spec; nil: the configuration does
// not run it) and next run (UTC, nil: unknown). Interval is the time between
// its runs after NextRun (0: unknown); /v1/dashboard flags a region late past twice it.
type Region struct {
	Region   string        `json:"region"`
	Name     string        `json:"name"`
	Schedule *string       `json:"schedule"`
	NextRun  *time.Time    `json:"next_run"`
	Interval time.Duration `json:"-"`
}

// RateLimit configures per-client rate limiting of /v1/.
type RateLimit struct {
	// Limiter decides per client (NewCounter, NewRedisCounter; nil:
	// no limit); Limit per Window is what the headers and messages state.
	Limiter Limiter
	Limit   int64
	Window  time.Duration
	// Key is "ip" (the connection's address, IPv6 by /64, no proxy header) or
	// "token" (the bearer token, hashed); a failed token counts against the address.
	Key string
}

// Options are what the server reads from: Store is required, the rest may be nil.
type Options struct {
	// Store is the database, opened read-only.
	Store store.Reader
	// Quota returns the status of every configured credential.
	Quota func(ctx context.Context) []quota.Status
	// Regions returns the configured regions with their next run after now; the
	// regions served are the dataset's and these (servedRegions).
	Regions func(now time.Time) []Region
	// Coverage returns the coverage of region ("" = every configured region)
	// over the since before now (GET /v1/coverage); nil: none.
	Coverage func(ctx context.Context, region string, since time.Duration) (store.Coverage, error)
	// Metrics serves /metrics (Prometheus); nil answers 404.
	Metrics http.Handler
	// Token, when set, is required (bearer) on every route but /healthz and the dashboard's files.
	Token     string
	RateLimit RateLimit
	// Timeout is each request's deadline, its database work then cancelled (0: config.DefaultServeTimeout).
	Timeout time.Duration
	// Hosts are the Host names accepted besides loopback names and IP addresses (serve.hosts).
	Hosts []string
	// CORSOrigins are the origins (scheme://host[:port]) browser apps may read from (serve.cors_origins).
	CORSOrigins []string
	// Now is the clock of next-run times (default time.Now).
	Now func() time.Time
	Log zerolog.Logger
}

type server struct {
	o Options
	// heavy holds a slot per running heavy request: half the store's
	// connections, so that /healthz and light requests still get one.
	heavy chan struct{}
	// clients holds the HeavyPerClient slots of each client with a heavy
	// request running or waiting.
	mu      sync.Mutex
	clients map[string]*clientSlot
}

type clientSlot struct {
	ch    chan struct{}
	users int // requests running or waiting: the entry goes at 0
}

// acquire waits for a slot of client until ctx is done (taken before a slot
// of s.heavy, so that a waiting client holds none); release gives it back.
func (s *server) acquire(ctx context.Context, client string) (release func(), err error) {
	s.mu.Lock()
	cs := s.clients[client]
	if cs == nil {
		cs = &clientSlot{ch: make(chan struct{}, HeavyPerClient)}
		s.clients[client] = cs
	}
	cs.users++
	s.mu.Unlock()
	done := func() {
		s.mu.Lock()
		if cs.users--; cs.users == 0 {
			delete(s.clients, client)
		}
		s.mu.Unlock()
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

// access says what guards a route; each level adds to the one before.
type access int

const (
	public  access = iota // no token, no rate limit (health, the dashboard's files)
	private               // the token when one is set
	api                   // and the per-client rate limit
	heavy                 // and a slot of the client's and of server.heavy
)

// allow is the Allow header of every path: each route is a GET (OPTIONS: cors).
const allow = "GET, HEAD, OPTIONS"

type route struct {
	pattern string
	handler http.HandlerFunc
	access  access
}

// routes is the route table.
func (s *server) routes() []route {
	const noCache = "no-cache"
	return []route{
		{"GET /healthz", s.healthz, public},
		{"GET /{$}", static(asset("dashboard.html"), "text/html; charset=utf-8", noCache), public},
		{"GET /dashboard.js", static(asset("dashboard.js"), "text/javascript; charset=utf-8", noCache), public},
		{"GET /dashboard.css", static(asset("dashboard.css"), "text/css; charset=utf-8", noCache), public},
		{"GET /favicon.ico", static(asset("favicon.ico"), "image/x-icon", "public, max-age=604800"), public},
		{"GET /metrics", func(w http.ResponseWriter, r *http.Request) { s.o.Metrics.ServeHTTP(w, r) }, private},
		{"GET /v1/openapi.yaml", static(openAPI, "application/yaml", noCache), api},
		{"GET /v1/dashboard", s.answer(s.dashboard), heavy},
		{"GET /v1/search", s.answer(s.search), heavy},
		{"GET /v1/charts/{region}", s.answer(s.chart), heavy},
		{"GET /v1/videos/{id}", s.answer(s.video), heavy},
		{"GET /v1/runs", s.answer(s.runs), api},
		{"GET /v1/quota", s.answer(s.quota), api},
		{"GET /v1/regions", s.answer(s.regions), api},
		{"GET /v1/coverage", s.answer(s.coverage), api},
	}
}

// Handler returns the HTTP handler of the API and the dashboard.
func Handler(o Options) http.Handler { return newServer(o).handler() }

// Opening is Handler(o) while the database is not open yet (o.Store and o.Coverage unused):
// every read answers 503 "unavailable" naming err (why it is not open), /healthz as ever.
func Opening(o Options, err error) http.Handler {
	u := unopened{err}
	o.Store, o.Coverage = u, func(context.Context, string, time.Duration) (store.Coverage, error) { return store.Coverage{}, u }
	return Handler(o)
}

// unopened is a store.Reader whose every read fails with itself: the database is not open yet.
type unopened struct{ err error }

func (u unopened) Error() string { return "the database is not open yet (retrying): " + u.err.Error() }
func (u unopened) SearchPage(context.Context, store.SearchQuery) ([]store.Hit, int, error) {
	return nil, 0, u
}
func (u unopened) CaptureAt(context.Context, store.CaptureQuery) (store.Capture, []store.Entry, error) {
	return store.Capture{}, nil, u
}
func (u unopened) History(context.Context, string) (store.VideoHistory, error) {
	return store.VideoHistory{}, u
}
func (u unopened) RunsPage(context.Context, store.RunsQuery) ([]store.Run, error) { return nil, u }
func (u unopened) Health(context.Context, string, time.Time) (store.RegionHealth, error) {
	return store.RegionHealth{}, u
}
func (u unopened) RunsStarted(context.Context, string, time.Time, time.Time) ([]store.Run, error) {
	return nil, u
}
func (u unopened) DatasetRegions(context.Context) ([]string, error) { return nil, u }
func (unopened) MaxOpenConns() int                                  { return 1 }

func newServer(o Options) *server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = config.DefaultServeTimeout
	}
	if o.Metrics == nil {
		o.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, "not_found", "no metrics here")
		})
	}
	slots := 1 // without a Store (tests of the guards)
	if o.Store != nil {
		slots = max(1, o.Store.MaxOpenConns()/2)
	}
	return &server{o: o, heavy: make(chan struct{}, slots), clients: map[string]*clientSlot{}}
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.routes() {
		mux.Handle(r.pattern, s.guard(r))
		mux.HandleFunc(strings.TrimPrefix(r.pattern, "GET "), func(w http.ResponseWriter, r *http.Request) {
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
// check, CORS, the query size bound and the deadline.
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
	h.Set("Allow", allow)
	if allowed {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD")
		h.Set("Access-Control-Allow-Headers", "Authorization")
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}

// hostAllowed reports whether the Host header names this server (against DNS
// rebinding): empty (HTTP/1.0), an IP address, a loopback name or in Options.Hosts.
func (s *server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	return host == "" || net.ParseIP(host) != nil || IsLoopbackHost(host) || slices.Contains(s.o.Hosts, host)
}

// IsLoopbackHost reports whether host (no port) names only the loopback interface:
// localhost, a name under .localhost (RFC 6761), or a loopback IP address.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// guard applies a route's access: token (compared in constant time), rate limit and heavy slots.
func (s *server) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenKey, ok := s.authenticate(w, r, rt)
		if !ok {
			return
		}
		client := clientKey(r.RemoteAddr, tokenKey)
		if rt.access >= api && !s.admit(w, r, client) {
			return
		}
		if rt.access == heavy {
			release, ok := s.heavySlot(w, r, client)
			if !ok {
				return
			}
			defer release()
		}
		rt.handler(w, r)
	})
}

// authenticate checks r's bearer token when rt needs one and a token is set,
// answering 401 (ok false) without it; tokenKey is the token's rate-limit
// key when serve.rate_limit keys by token ("" otherwise).
func (s *server) authenticate(w http.ResponseWriter, r *http.Request, rt route) (tokenKey string, ok bool) {
	if rt.access == public || s.o.Token == "" {
		return "", true
	}
	tok, ok := s.bearer(r)
	if !ok {
		// A wrong token costs the address a request: guessing is rate-limited too.
		if s.admit(w, r, clientKey(r.RemoteAddr, "")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="trendfetch"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token> (the token in serve.token_file)")
		}
		return "", false
	}
	if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		c.authenticated.Store(true) // it keeps the long idle timeout
	}
	if s.o.RateLimit.Key == "token" {
		sum := sha256.Sum256([]byte(tok))
		tokenKey = hex.EncodeToString(sum[:8])
	}
	return tokenKey, true
}

// heavySlot takes client's heavy-request slot, then one of the server's; ok
// false when the answer (an error) is written. release gives both back.
func (s *server) heavySlot(w http.ResponseWriter, r *http.Request, client string) (release func(), ok bool) {
	releaseClient, err := s.acquire(r.Context(), client)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	select {
	case s.heavy <- struct{}{}:
		return func() { <-s.heavy; releaseClient() }, true
	case <-r.Context().Done():
		releaseClient()
		s.fail(w, r, r.Context().Err())
		return nil, false
	}
}

// bearer returns the request's bearer token ("Authorization: Bearer <token>", the scheme in any
// case: RFC 7235) and whether it is Options.Token (compared in constant time; true without one).
func (s *server) bearer(r *http.Request) (string, bool) {
	if s.o.Token == "" {
		return "", true
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	tok = strings.TrimSpace(tok)
	return tok, strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.Token)) == 1
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
		secs := int64(math.Ceil(d.RetryAfter.Seconds())) // never early
		h.Set("RateLimit-Reset", strconv.FormatInt(secs, 10))
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, http.StatusTooManyRequests, "rate_limited",
			fmt.Sprintf("more than %d requests in %s from this client; retry after %d s", rl.Limit, rl.Window, secs))
		return false
	}
	h.Set("RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(rl.Window.Seconds())), 10))
	return true
}

// Health is the body of /healthz, here and on the scheduler's --metrics-addr (WriteHealth).
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

// healthz reads the newest run, so that a database it cannot read is reported: the error
// itself only to a caller with the token (it may name the database's host, port and role).
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	_, err := s.o.Store.RunsPage(r.Context(), store.RunsQuery{Limit: 1})
	if err != nil && r.Context().Err() == nil {
		s.o.Log.Error().Err(err).Msg("health check: the database cannot be read")
	}
	if _, ok := s.bearer(r); err != nil && !ok {
		err = errors.New("the database cannot be read (details with the token, and in the server's log)")
	}
	WriteHealth(w, err)
}

// asset is the embedded file name.
func asset(name string) []byte {
	b, _ := assets.ReadFile(name) // embedded: cannot fail
	return b
}

// openAPI is openapi.yaml with the limits declared in Go filled in.
var openAPI = func() []byte {
	n := strconv.Itoa
	return []byte(strings.NewReplacer(
		"${MAX_SEARCH_LIMIT}", n(store.MaxSearchLimit), "${DEFAULT_SEARCH_LIMIT}", n(store.DefaultSearchLimit),
		"${MAX_LIMIT}", n(MaxLimit), "${DEFAULT_LIMIT}", n(DefaultLimit),
		"${DASHBOARD_RUNS}", n(DashboardRuns), "${DASHBOARD_ENTRIES}", n(DashboardEntries),
		"${HEAVY_PER_CLIENT}", n(HeavyPerClient), "${MAX_RESPONSE_BYTES}", n(MaxResponseBytes),
		"${SEARCH_CANDIDATES}", n(store.SearchCandidates), "${UNSEGMENTED_CANDIDATES}", n(store.UnsegmentedCandidates), "${MAX_REASON_BYTES}", n(store.MaxReasonBytes),
	).Replace(string(asset("openapi.yaml"))))
}()

// static answers b with its Content-Type and Cache-Control.
func static(b []byte, contentType, cacheControl string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", cacheControl)
		w.Write(b)
	}
}

// answer serves what h returns as JSON (200), or its error (fail).
func (s *server) answer(h func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// paramError is a bad request parameter: 400 with this message.
type paramError string

func (e paramError) Error() string { return string(e) }

// badParam is the error of parameter name with value v (clipped): `name="v": want`.
func badParam(name, v, want string) error {
	return paramError(fmt.Sprintf("%s=%q: %s", name, termtext.Clip(v, 64), want))
}

// listParams reads the limit (def when absent, else 1..maxLimit), the optional region and the
// cursor (0 when absent, else 1..maxCursor; hint ends its error).
func listParams(q url.Values, def, maxLimit int, maxCursor int64, hint string) (
	limit int, region string, cursor int64, err error) {
	limit = def
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > maxLimit {
			return 0, "", 0, badParam("limit", v, fmt.Sprintf("want a whole number 1-%d", maxLimit))
		}
	}
	if region, err = regionParam(q.Get("region")); err != nil {
		return 0, "", 0, err
	}
	if c := q.Get("cursor"); c != "" {
		if cursor, err = strconv.ParseInt(c, 10, 64); err != nil || cursor < 1 || cursor > maxCursor {
			return 0, "", 0, badParam("cursor", c, "want the next_cursor of the previous page"+hint)
		}
	}
	return limit, region, cursor, nil
}

// regionParam reads an optional region code.
func regionParam(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	code, err := regions.Parse(v)
	if err != nil {
		return "", badParam("region", v, err.Error())
	}
	return code, nil
}

// nextCursor is the next_cursor of an answer: null for 0 (the last page).
func nextCursor(n int64) *string {
	if n == 0 {
		return nil
	}
	c := strconv.FormatInt(n, 10)
	return &c
}

func (s *server) search(r *http.Request) (any, error) {
	q := r.URL.Query()
	text := strings.TrimSpace(q.Get("q"))
	if text == "" {
		return nil, paramError("q is required: the search text")
	}
	limit, region, offset, err := listParams(q, store.DefaultSearchLimit, store.MaxSearchLimit,
		store.MaxSearchLimit-1, " (with the same q)")
	if err != nil {
		return nil, err
	}
	hits, next, err := s.o.Store.SearchPage(r.Context(), store.SearchQuery{Text: text, Region: region, Limit: limit, Offset: int(offset)})
	return map[string]any{"query": text, "hits": nonNil(hits), "next_cursor": nextCursor(int64(next))}, err
}

func (s *server) chart(r *http.Request) (any, error) {
	region, err := regionParam(r.PathValue("region"))
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	cq := store.CaptureQuery{Region: region, Kind: q.Get("kind"), Query: q.Get("query")}
	switch p := q.Get("partial"); p {
	case "", "false":
	case "true":
		cq.Partial = true
	default:
		return nil, badParam("partial", p, "want true or false")
	}
	if !slices.Contains([]string{"", store.KindChart, store.KindCategory, store.KindSearch}, cq.Kind) {
		return nil, badParam("kind", cq.Kind, "want chart, category or search")
	}
	if at := q.Get("at"); at != "" {
		if cq.At, err = store.ParseAt(at); err != nil {
			return nil, badParam("at", at, err.Error())
		}
	}
	c, entries, err := s.o.Store.CaptureAt(r.Context(), cq)
	return map[string]any{"capture": c, "entries": nonNil(entries)}, err
}

func (s *server) video(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if !store.IsVideoID(id) {
		return nil, paramError(fmt.Sprintf("id %q: want a video id, 11 characters of A-Z a-z 0-9 _ -", termtext.Clip(id, 64)))
	}
	return s.o.Store.History(r.Context(), id)
}

func (s *server) runs(r *http.Request) (any, error) {
	q := r.URL.Query()
	limit, region, before, err := listParams(q, DefaultLimit, MaxLimit, math.MaxInt64, "")
	if err != nil {
		return nil, err
	}
	out, err := s.o.Store.RunsPage(r.Context(), store.RunsQuery{Region: region, Before: before, Limit: limit + 1})
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return map[string]any{"runs": nonNil(out), "next_cursor": nextCursor(next)}, err
}

// Dashboard is GET /v1/dashboard: everything the dashboard shows on one
// refresh; openapi.yaml describes it and the types below.
type Dashboard struct {
	GeneratedAt time.Time          `json:"generated_at"`
	Credentials []quota.StatusView `json:"credentials"`
	Runs        []store.Run        `json:"runs"`
	Regions     []DashboardRegion  `json:"regions"`
}

// DashboardRegion is a region of a Dashboard (chart nil: none stored).
type DashboardRegion struct {
	Region
	Health          store.RegionHealth `json:"health"`
	IntervalSeconds *int64             `json:"interval_seconds"`
	Late            bool               `json:"late"`
	// SlotsLastDay is the coverage totals of its slots in the last 24 hours (nil: not scheduled here).
	SlotsLastDay map[store.SlotOutcome]int `json:"slots_last_day"`
	Chart        *DashboardChart           `json:"chart"`
}

// DashboardChart is a capture's top DashboardEntries, ranks against the one before.
type DashboardChart struct {
	Capture            store.Capture    `json:"capture"`
	PreviousCapturedAt *time.Time       `json:"previous_captured_at"`
	Entries            []DashboardEntry `json:"entries"`
}

// DashboardEntry is a chart entry with its previous rank and change (nil: new).
type DashboardEntry struct {
	store.Entry
	PreviousRank *int `json:"previous_rank"`
	RankChange   *int `json:"rank_change"`
}

func (s *server) dashboard(r *http.Request) (any, error) {
	ctx := r.Context()
	runs, err := s.o.Store.RunsPage(ctx, store.RunsQuery{Limit: DashboardRuns})
	if err != nil {
		return nil, err
	}
	d := Dashboard{GeneratedAt: s.o.Now().UTC(), Credentials: s.credentials(ctx), Runs: nonNil(runs), Regions: []DashboardRegion{}}
	served, err := s.servedRegions(ctx)
	if err != nil {
		return nil, err
	}
	slots := s.slotsLastDay(ctx)
	for _, reg := range served {
		dr, err := s.dashboardRegion(ctx, reg, d.GeneratedAt, slots[reg.Region])
		if err != nil {
			return nil, err
		}
		d.Regions = append(d.Regions, dr)
	}
	return d, nil
}

// dashboardRegion is reg's health at now (late: no run for over twice its
// interval) and its latest chart.
func (s *server) dashboardRegion(ctx context.Context, reg Region, now time.Time, slots map[store.SlotOutcome]int) (DashboardRegion, error) {
	dr := DashboardRegion{Region: reg, SlotsLastDay: slots}
	var err error
	if dr.Health, err = s.o.Store.Health(ctx, reg.Region, quota.DayStart(now)); err != nil {
		return dr, err
	}
	if reg.Interval > 0 {
		iv := int64(reg.Interval / time.Second)
		dr.IntervalSeconds = &iv
		if last := cmp.Or(dr.Health.LastSuccessAt, dr.Health.LastStartedAt); last != nil {
			dr.Late = now.Sub(*last) > 2*reg.Interval
		}
	}
	dr.Chart, err = s.dashboardChart(ctx, reg.Region)
	return dr, err
}

// dashboardChart is region's latest capture (nil: none yet), its first
// DashboardEntries entries with their rank change against the capture before.
func (s *server) dashboardChart(ctx context.Context, region string) (*DashboardChart, error) {
	c, entries, err := s.o.Store.CaptureAt(ctx, store.CaptureQuery{Region: region})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	pc, pe, err := s.o.Store.CaptureAt(ctx, store.CaptureQuery{Region: region, At: c.CapturedAt.Add(-time.Microsecond)})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	chart := &DashboardChart{Capture: c, Entries: []DashboardEntry{}}
	prev := map[string]int{}
	if err == nil {
		chart.PreviousCapturedAt = &pc.CapturedAt
		for _, e := range pe {
			prev[e.VideoID] = e.Rank
		}
	}
	for _, e := range entries[:min(len(entries), DashboardEntries)] {
		de := DashboardEntry{Entry: e}
		if was, ok := prev[e.VideoID]; ok {
			change := was - e.Rank
			de.PreviousRank, de.RankChange = &was, &change
		}
		chart.Entries = append(chart.Entries, de)
	}
	return chart, nil
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

func (s *server) quota(r *http.Request) (any, error) {
	return map[string]any{"credentials": s.credentials(r.Context())}, nil
}

func (s *server) configuredRegions() []Region {
	if s.o.Regions == nil {
		return []Region{}
	}
	return nonNil(s.o.Regions(s.o.Now()))
}

// servedRegions are the configured regions (with their schedules), then the other regions the
// dataset holds, in code order, without a schedule (docs/api.md).
func (s *server) servedRegions(ctx context.Context) ([]Region, error) {
	out := s.configuredRegions()
	if s.o.Store == nil { // tests of the guards
		return out, nil
	}
	codes, err := s.o.Store.DatasetRegions(ctx)
	for _, c := range codes {
		if !slices.ContainsFunc(out, func(r Region) bool { return r.Region == c }) {
			out = append(out, Region{Region: c, Name: regions.Name(c)})
		}
	}
	return out, err
}

func (s *server) regions(r *http.Request) (any, error) {
	out, err := s.servedRegions(r.Context())
	return map[string]any{"regions": out}, err
}

// slotsLastDay is each configured region's coverage totals of the last 24 hours (none when it
// cannot be read: logged, the dashboard shows the rest).
func (s *server) slotsLastDay(ctx context.Context) map[string]map[store.SlotOutcome]int {
	out := map[string]map[store.SlotOutcome]int{}
	if s.o.Coverage == nil {
		return out
	}
	c, err := s.o.Coverage(ctx, "", 24*time.Hour)
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("dashboard: cannot read the slots of the last day")
	}
	for _, rc := range c.Regions {
		out[rc.Region] = rc.Totals
	}
	return out
}

// coverage is GET /v1/coverage?region=&since= (docs/operations.md "Coverage").
func (s *server) coverage(r *http.Request) (any, error) {
	q := r.URL.Query()
	region, err := regionParam(q.Get("region"))
	if err != nil {
		return nil, err
	}
	since := 24 * time.Hour
	if v := q.Get("since"); v != "" {
		if since, err = duration.Parse(v); err != nil || since <= 0 || since > MaxCoverageSince {
			return nil, badParam("since", v, "want a positive duration up to 31d, such as 24h or 7d")
		}
	}
	if s.o.Coverage == nil || (region != "" && !slices.ContainsFunc(s.configuredRegions(), func(r Region) bool { return r.Region == region })) {
		return nil, fmt.Errorf("region %s is not scheduled in this server's configuration: %w", region, store.ErrNotFound)
	}
	return s.o.Coverage(r.Context(), region, since)
}

// fail answers err: 400 for a bad parameter or search syntax, 404 for
// nothing found, 503 when the request's deadline passed, nothing when the
// client went away, 500 otherwise (logged; the message is generic).
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var pe paramError
	var qe *store.QueryError
	switch ctxErr := r.Context().Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		s.o.Log.Warn().Str("path", r.URL.Path).Dur("timeout", s.o.Timeout).Msg("request cancelled at its deadline")
		writeError(w, http.StatusServiceUnavailable, "timeout",
			fmt.Sprintf("the request took longer than serve.timeout (%s) and was cancelled: ask for less (a smaller limit, longer words), or retry later", s.o.Timeout))
	case ctxErr != nil:
		// the client went away: its work is cancelled, nobody to answer
	case errors.As(err, &pe):
		writeError(w, http.StatusBadRequest, "bad_parameter", pe.Error())
	case errors.As(err, &qe):
		writeError(w, http.StatusBadRequest, "bad_query", "q: "+qe.Error())
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.As(err, new(unopened)):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	case store.Transient(err):
		// A writer was rebuilding the WAL index (docs/api.md "Reading as another user").
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "busy", "the database was being opened by a writer; retry in a second")
	default:
		s.o.Log.Error().Err(err).Str("path", r.URL.Path).Msg("request failed")
		writeError(w, http.StatusInternalServerError, "internal", "internal error (logged by the server)")
	}
}

// APIError is the body of every error answer: {"error": {"code", "message"}}.
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
	if err := enc.Encode(v); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "internal error: the answer cannot be encoded")
		return
	} else if b.Len() > MaxResponseBytes {
		writeError(w, http.StatusInternalServerError, "response_too_large", fmt.Sprintf("the answer would be larger than %d bytes: ask for less (a smaller limit)", MaxResponseBytes))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
