// Package serve is trendfetch's read API and operator dashboard (`trendfetch
// serve`, `trendfetch schedule --serve`; DESIGN.md §8): JSON under /v1/ in
// the same snake_case shapes as the CLI's --json, an OpenAPI 3 description
// at /v1/openapi.yaml, /healthz, /metrics and the dashboard at /. Nothing it
// serves spends upstream quota or writes the store: searches run on the
// local FTS5 index, and the store is opened read-only.
//
// Clients of /v1/ are rate-limited per client (IP address or bearer token)
// by the project's own sliding-window limiter: the in-memory backend for one
// instance, or Redis so several instances share one budget per client. Over
// the limit a request gets 429 with a Retry-After in whole seconds rounded
// up (exact from the log, never early); every /v1/ response carries
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (IETF
// draft-ietf-httpapi-ratelimit-headers).
package serve

import (
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
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Limits of request parameters.
const (
	// DefaultLimit is the number of items of a list when limit is not given.
	DefaultLimit = 20
	// MaxLimit is the largest accepted limit parameter.
	MaxLimit = 200
	// MaxQueryBytes bounds the raw query string of a request.
	MaxQueryBytes = 2048
)

// RateMethod is the call site name under which the limiter counts API
// requests; RateBucket is its bucket.
const (
	RateMethod = "serve.request"
	RateBucket = "requests"
)

// Region is one configured region as GET /v1/regions shows it.
type Region struct {
	// Region is the code (regionCode), Name its English short name.
	Region string `json:"region"`
	Name   string `json:"name"`
	// Schedule describes when it runs ("every 2h0m0s +3m0s" or a cron spec).
	Schedule string `json:"schedule"`
	// NextRun is the next scheduled run (UTC), null when unknown.
	NextRun *time.Time `json:"next_run"`
}

// RateLimit configures per-client rate limiting of /v1/.
type RateLimit struct {
	// Limiter counts RateMethod in a bucket RateBucket (see NewRateLimiter).
	Limiter *quota.Limiter
	// Limit is the bucket's limit (for the RateLimit-Limit header).
	Limit int64
	// Window is the bucket's window (an upper bound for RateLimit-Reset).
	Window time.Duration
	// Key is "ip" (the connection's address; proxies' headers are not
	// trusted) or "token" (the bearer token, hashed: never stored).
	Key string
}

// NewRateLimiter returns a limiter of limit requests per client per window
// over backend (quota.NewMemory() for one instance, the Redis backend for
// several).
func NewRateLimiter(backend quota.Backend, limit int64, window time.Duration) (*quota.Limiter, error) {
	return quota.New(backend, []quota.Bucket{{Name: RateBucket, Limit: limit, Window: window}},
		quota.Costs{RateMethod: {{Bucket: RateBucket, Units: 1}}})
}

// Options are what the server reads from. Store is required; the rest may
// be nil.
type Options struct {
	// Store is the database, opened read-only.
	Store *store.Store
	// Quota returns the status of every configured credential.
	Quota func(ctx context.Context) []quota.Status
	// Regions returns the configured regions with their next run after now.
	Regions func(now time.Time) []Region
	// Metrics serves /metrics (Prometheus); nil answers 404.
	Metrics http.Handler
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz and / (compared in constant time).
	Token string
	// RateLimit limits /v1/ per client; a nil Limiter means no limit.
	RateLimit RateLimit
	// Now is the clock of next-run times (default time.Now).
	Now func() time.Time
	Log zerolog.Logger
}

type server struct {
	o Options
}

//go:embed openapi.yaml dashboard.html
var assets embed.FS

// Routes lists every route the server answers, as net/http ServeMux
// patterns; openapi.yaml documents each (a test checks both ways).
func Routes() []string {
	var out []string
	for _, r := range (&server{}).routes() {
		out = append(out, r.pattern)
	}
	return out
}

type route struct {
	pattern string
	handler http.HandlerFunc
}

// routes is the route table: the top-level routes, then those under /v1/
// (rate-limited).
func (s *server) routes() []route {
	return []route{
		{"GET /healthz", s.healthz},
		{"GET /metrics", s.metrics},
		{"GET /{$}", s.asset("dashboard.html", "text/html; charset=utf-8")},
		{"GET /v1/openapi.yaml", s.asset("openapi.yaml", "application/yaml")},
		{"GET /v1/search", s.search},
		{"GET /v1/charts/{region}", s.chart},
		{"GET /v1/videos/{id}", s.video},
		{"GET /v1/runs", s.runs},
		{"GET /v1/quota", s.quota},
		{"GET /v1/regions", s.regions},
	}
}

// Handler returns the HTTP handler of the API and the dashboard.
func Handler(o Options) http.Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &server{o: o}
	mux := http.NewServeMux()
	v1 := http.NewServeMux()
	for _, r := range s.routes() {
		if strings.HasPrefix(r.pattern, "GET /v1/") {
			v1.HandleFunc(r.pattern, r.handler)
		} else {
			mux.HandleFunc(r.pattern, r.handler)
		}
	}
	v1.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path+" (see /v1/openapi.yaml)")
	})
	mux.Handle("/v1/", s.rateLimited(v1))
	return s.guard(mux)
}

// guard applies the bearer token and the query size bound to every route
// but /healthz and the dashboard's page (which holds no data; it calls the
// API with the token given in its URL fragment, #token=...).
func (s *server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/" && s.o.Token != "" {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="trendfetch"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token> (the token in --token-file)")
				return
			}
		}
		if len(r.URL.RawQuery) > MaxQueryBytes {
			writeError(w, http.StatusRequestURITooLong, "query_too_long", fmt.Sprintf("the query string is longer than %d bytes", MaxQueryBytes))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientKey names the client for the limiter: "ip-<address>" or
// "token-<first 16 hex digits of its SHA-256>" (a secret never becomes a key).
func (s *server) clientKey(r *http.Request) string {
	if s.o.RateLimit.Key == "token" {
		if tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); tok != "" {
			sum := sha256.Sum256([]byte(tok))
			return "serve-token-" + hex.EncodeToString(sum[:8])
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "serve-ip-" + host
}

// rateLimited reserves one request of the client before next runs.
func (s *server) rateLimited(next http.Handler) http.Handler {
	rl := s.o.RateLimit
	if rl.Limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := rl.Limiter.Reserve(r.Context(), s.clientKey(r), RateMethod)
		if err != nil {
			// A down limiter backend must not take the read API down:
			// fail open, logged.
			s.o.Log.Warn().Err(err).Msg("rate limiter unavailable: request served unmetered")
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("RateLimit-Limit", strconv.FormatInt(rl.Limit, 10))
		h.Set("RateLimit-Remaining", strconv.FormatInt(d.Remaining[RateBucket], 10))
		if !d.Allowed {
			secs := ceilSeconds(d.RetryAfter)
			h.Set("RateLimit-Reset", strconv.FormatInt(secs, 10))
			h.Set("Retry-After", strconv.FormatInt(secs, 10))
			writeError(w, http.StatusTooManyRequests, "rate_limited",
				fmt.Sprintf("more than %d requests in %s from this client; retry after %d s", rl.Limit, rl.Window, secs))
			return
		}
		h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(rl.Window), 10))
		next.ServeHTTP(w, r)
	})
}

// ceilSeconds rounds d up to whole seconds (never early).
func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.o.Store.DB().PingContext(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "store_unavailable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		writeError(w, http.StatusNotFound, "not_found", "no metrics here")
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
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
		w.Write(b)
	}
}

// limitParam reads the limit parameter: DefaultLimit when absent, 1..MaxLimit.
func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, &paramError{"limit", fmt.Sprintf("limit=%q: want a whole number 1-%d", clip(v), MaxLimit)}
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
func clip(s string) string { return config.Truncate(s, 64) }

func (s *server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	text := strings.TrimSpace(q.Get("q"))
	if text == "" {
		s.fail(w, &paramError{"q", "q is required: the search text"})
		return
	}
	limit, err := limitParam(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	region, err := regionParam(q.Get("region"))
	if err != nil {
		s.fail(w, err)
		return
	}
	hits, err := s.o.Store.Search(r.Context(), store.SearchQuery{Text: text, Region: region, Limit: limit})
	if err != nil {
		s.fail(w, err)
		return
	}
	if hits == nil {
		hits = []store.Hit{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": text, "hits": hits})
}

func (s *server) chart(w http.ResponseWriter, r *http.Request) {
	region, err := regionParam(r.PathValue("region"))
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	cq := store.CaptureQuery{Region: region, Kind: q.Get("kind"), Query: q.Get("query"), Partial: q.Get("partial") == "true"}
	switch cq.Kind {
	case "", store.KindChart, store.KindCategory, store.KindSearch:
	default:
		s.fail(w, &paramError{"kind", fmt.Sprintf("kind=%q: want chart, category or search", clip(cq.Kind))})
		return
	}
	if at := q.Get("at"); at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			s.fail(w, &paramError{"at", fmt.Sprintf("at=%q: want an RFC 3339 time, e.g. 2026-03-02T08:00:00Z", clip(at))})
			return
		}
		cq.At = t
	}
	c, entries, err := s.o.Store.CaptureAt(r.Context(), cq)
	if err != nil {
		s.fail(w, err)
		return
	}
	if entries == nil {
		entries = []store.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"capture": c, "entries": entries})
}

func (s *server) video(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > 64 {
		s.fail(w, &paramError{"id", "id: want a video id"})
		return
	}
	h, err := s.o.Store.History(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *server) runs(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	region, err := regionParam(r.URL.Query().Get("region"))
	if err != nil {
		s.fail(w, err)
		return
	}
	// Region filtering reads a bounded window of recent runs.
	fetch := limit
	if region != "" {
		fetch = MaxLimit * 10
	}
	all, err := s.o.Store.Runs(r.Context(), fetch)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]store.Run, 0, min(limit, len(all)))
	for _, run := range all {
		if region == "" || run.Region == region {
			out = append(out, run)
			if len(out) == limit {
				break
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
}

func (s *server) quota(w http.ResponseWriter, r *http.Request) {
	views := []quota.StatusView{}
	if s.o.Quota != nil {
		for _, st := range s.o.Quota(r.Context()) {
			views = append(views, st.View())
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"credentials": views})
}

func (s *server) regions(w http.ResponseWriter, r *http.Request) {
	out := []Region{}
	if s.o.Regions != nil {
		out = append(out, s.o.Regions(s.o.Now())...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"regions": out})
}

// fail answers err: 400 for a bad parameter or search syntax, 404 for
// nothing found, 500 otherwise (logged; the message is generic).
func (s *server) fail(w http.ResponseWriter, err error) {
	var pe *paramError
	var qe *store.QueryError
	switch {
	case errors.As(err, &pe):
		writeError(w, http.StatusBadRequest, "bad_parameter", pe.msg)
	case errors.As(err, &qe):
		writeError(w, http.StatusBadRequest, "bad_query", "q: "+qe.Error())
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, context.Canceled):
		// the client went away
	default:
		s.o.Log.Error().Err(err).Msg("request failed")
		writeError(w, http.StatusInternalServerError, "internal", "internal error (logged by the server)")
	}
}

// writeError writes {"error": {"code", "message"}}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// Timeouts bound what a client can hold (DESIGN.md §8): a stalled client
// never keeps a connection for long.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts: 5 s to send the headers, 10 s for the whole request,
// 30 s to write the answer, 60 s idle between keep-alive requests.
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: 60 * time.Second}

// MaxHeaderBytes bounds a request's headers.
const MaxHeaderBytes = 16 << 10

// NewServer returns an http.Server for h with the timeouts t and
// MaxHeaderBytes.
func NewServer(h http.Handler, t Timeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}
