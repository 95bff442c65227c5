package youtubetest

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"google.golang.org/api/option"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// defaultPage is the default maxResults of videos.list (discovery document: default "5").
const defaultPage = 5

// pathMethods maps a REST path to its API method: the first call site of the path by name
// (videos.list, not its refresh call site videos.list.refresh).
var pathMethods = func() map[string]string {
	out := map[string]string{}
	for _, site := range callsite.All() {
		if _, ok := out[site.Path]; !ok {
			out[site.Path] = site.Name
		}
	}
	return out
}()

// handlers answer the served methods, after the key, quota and fault checks and the part
// parameter's (against the parts of resource): a pointer to a youtube list response for
// writeList, or the error to answer.
var handlers = map[string]struct {
	resource any
	serve    func(s *Server, q url.Values, parts map[string]bool) (any, *errorResponse)
}{
	callsite.VideosList:          {&youtube.Video{}, (*Server).serveVideos},
	callsite.CategoriesList:      {&youtube.VideoCategory{}, (*Server).serveCategories},
	callsite.SearchList:          {&youtube.SearchResult{}, (*Server).serveSearch},
	callsite.ChannelsList:        {&youtube.Channel{}, (*Server).serveChannels},
	callsite.VideosBatchGetStats: {&youtube.VideoStat{}, (*Server).serveBatchGetStats},
}

// Request is what the Server recorded about one request, for assertions in tests: its API
// method (e.g. callsite.VideosList; "" for a path not served), query parameters without "key"
// (keys are never recorded) and HTTP status answered (0 if a hook wrote nothing).
type Request struct {
	Method string
	Query  url.Values
	Status int
}

// fault is an injected answer (FailNext, AnswerNext) for the next n requests to method.
type fault struct {
	method string
	n      int
	answer func(method string) *errorResponse
}

// Server is the emulator, an http.Handler answering in the library's own youtube.* types,
// marshalled; every request costs its call site's callsite.Site.Units, errors included (its
// differences from Google: docs/design.md §7). Safe for concurrent use; keys are never logged.
type Server struct {
	mu           sync.Mutex
	charts       map[string][]*youtube.Video // region -> rank order
	extra        []*youtube.Video            // AddVideos
	byID         map[string]*youtube.Video
	searchVideos map[string]*youtube.Video                     // found by the search pages, by id
	categories   map[string]*youtube.VideoCategoryListResponse // region ("" = default)
	search       []*youtube.SearchListResponse
	channels     []*youtube.Channel
	dayCharts    map[string][]dated          // LoadDays: region -> ascending days of its chart
	dayStats     map[string][]dated          // LoadDays: video id -> its rows, ascending by date (one video each)
	date         string                      // the date served ("" until SetDate)
	keys         []string                    // empty = any key (or none) is accepted
	limit        int64                       // 0 = no limit
	units        map[string]map[string]int64 // Google bucket ("" = the shared units) -> key -> units
	faults       []fault
	hook         func(http.ResponseWriter, *http.Request) bool
	requests     []Request
	calls        map[string]int // method -> requests
}

// New returns an empty Server (no charts, categories, search results or channels; any API
// key accepted; no daily limit), to serve with StartTest or any http.Server.
func New() *Server {
	return &Server{charts: map[string][]*youtube.Video{}, byID: map[string]*youtube.Video{},
		categories: map[string]*youtube.VideoCategoryListResponse{}, units: map[string]map[string]int64{},
		dayCharts: map[string][]dated{}, calls: map[string]int{}}
}

// NewService returns a real youtube/v3 client for the emulator at baseURL (as StartTest
// returns), sending key as the "key" parameter (none when key is ""). Do not add
// option.WithHTTPClient: it takes precedence over every other option and the key is dropped.
func NewService(ctx context.Context, baseURL, key string) (*youtube.Service, error) {
	auth := option.WithoutAuthentication()
	if key != "" {
		auth = option.WithAPIKey(key)
	}
	svc, err := youtube.NewService(ctx, option.WithEndpoint(strings.TrimSuffix(baseURL, "/")+"/"), auth)
	if err != nil {
		return nil, fmt.Errorf("cannot create youtube client for %s: %w", baseURL, err)
	}
	return svc, nil
}

// get returns f's result under s.mu.
func get[T any](s *Server, f func() T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f()
}

// locked runs f under s.mu.
func (s *Server) locked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// SetKeys restricts the accepted API keys to keys; with none, every key (and none) is
// accepted again, the default. Any other key gets the real 400 keyInvalid answer
// (docs/design.md §3) and costs no units.
func (s *Server) SetKeys(keys ...string) { s.locked(func() { s.keys = slices.Clone(keys) }) }

// SetDailyLimit sets the shared units each API key may spend (0, the default, is unlimited).
// A request that would take its key past it gets the recorded 403 quotaExceeded body
// (docs/design.md §7) and costs nothing. Units spent so far are kept (see ResetQuota).
func (s *Server) SetDailyLimit(units int64) { s.locked(func() { s.limit = units }) }

// ResetQuota forgets the units spent, as Google's reset at midnight Pacific Time does; call
// counts and the request log are kept.
func (s *Server) ResetQuota() { s.locked(func() { s.units = map[string]map[string]int64{} }) }

// Units returns the units API key key ("" = requests without a key) spent from the project's
// shared daily units (every method without its own Google bucket).
func (s *Server) Units(key string) int64 { return s.BucketUnits("", key) }

// BucketUnits returns the units key spent from a method's own Google bucket, e.g.
// callsite.BucketStats for videos.batchGetStats (see callsite.Site.GoogleBucket).
func (s *Server) BucketUnits(bucket, key string) int64 {
	return get(s, func() int64 { return s.units[bucket][key] })
}

// Calls returns how many requests method (a callsite name) received, whatever their
// outcome (errors, rejected keys and quota denials included).
func (s *Server) Calls(method string) int { return get(s, func() int { return s.calls[method] }) }

// TotalCalls returns how many requests the Server received, on any path.
func (s *Server) TotalCalls() int { return get(s, func() int { return len(s.requests) }) }

// Requests returns a copy of the log of requests received, oldest first (read-only: the
// Query values are the log's own).
func (s *Server) Requests() []Request {
	return get(s, func() []Request { return slices.Clone(s.requests) })
}

// FailNext makes the next n requests to method ("" = any) fail with HTTP status and Google's
// body for it (5xx backendError, 429 rateLimitExceeded, 403 quotaExceeded, else badRequest),
// after the key and quota checks and the charge. Calls queue: FailNext(callsite.VideosList,
// 2, 503) then FailNext("", 1, 500) fails two videos.list requests, then one more request.
func (s *Server) FailNext(method string, n int, status int) {
	s.queueFault(fault{method, n, func(string) *errorResponse { return errStatus(status) }})
}

// AnswerNext makes the next n requests to method ("" = any method) get the quota answer a,
// charged and queued like FailNext's failures.
func (s *Server) AnswerNext(method string, n int, a Answer) {
	s.queueFault(fault{method, n, func(m string) *errorResponse { return answerBody(a, m) }})
}

func (s *Server) queueFault(f fault) {
	if f.n > 0 {
		s.locked(func() { s.faults = append(s.faults, f) })
	}
}

// SetHook installs h (nil removes it). It runs for every request to a served method after
// the key and quota checks and the charge, before any injected failure and the answer,
// without the Server's lock. h may delay, write its own answer or break the connection
// (http.ResponseController reaches Hijack and Flush); if it returns true nothing more is written.
func (s *Server) SetHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.locked(func() { s.hook = h })
}

// statusWriter records the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = cmp.Or(w.status, code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.status = cmp.Or(w.status, http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (Hijack, Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP answers one GET of an API method or ControlPath, as docs/design.md §7 ("What it
// answers") describes: other paths are 404, other HTTP methods 405, both uncharged.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ControlPath {
		s.serveControl(w, r)
		return
	}
	method, q := pathMethods[strings.TrimSuffix(r.URL.Path, "/")], r.URL.Query()
	key := cmp.Or(q.Get("key"), r.Header.Get("X-Goog-Api-Key"))
	q.Del("key")
	sw := &statusWriter{ResponseWriter: w}
	idx := get(s, func() int {
		s.requests = append(s.requests, Request{Method: method, Query: q})
		s.calls[method]++
		return len(s.requests) - 1
	})
	defer s.locked(func() { s.requests[idx].Status = sw.status })
	if method == "" {
		writeError(sw, apiError(http.StatusNotFound, "global", "notFound", "Not Found", ""))
		return
	}
	if r.Method != http.MethodGet {
		writeError(sw, apiError(http.StatusMethodNotAllowed, "global", "httpMethodNotAllowed", "Method Not Allowed", ""))
		return
	}
	denial, injected, hook := s.admit(method, key)
	switch {
	case denial != nil:
		writeError(sw, denial)
	case hook != nil && hook(sw, r):
	case injected != nil:
		writeError(sw, injected(method))
	default:
		h := handlers[method]
		parts, e := parseParts(q, h.resource)
		var resp any
		if e == nil {
			resp, e = h.serve(s, q, parts)
		}
		if e != nil {
			writeError(sw, e)
		} else {
			writeList(sw, resp)
		}
	}
}

// admit checks key and quota and charges method's units. It returns the denial answered
// instead (nil when admitted), the next injected fault for method (nil if none) and the hook.
func (s *Server) admit(method, key string) (denial *errorResponse, injected func(string) *errorResponse,
	hook func(http.ResponseWriter, *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) > 0 && !slices.Contains(s.keys, key) {
		return errKeyInvalid, nil, nil
	}
	site, _ := callsite.Lookup(method)
	bucket := site.GoogleBucket // a method's own Google bucket has neither the shared units nor their limit
	if bucket == "" && s.limit > 0 && s.units[""][key]+site.Units > s.limit {
		return errQuotaExceeded, nil, nil
	}
	if s.units[bucket] == nil {
		s.units[bucket] = map[string]int64{}
	}
	s.units[bucket][key] += site.Units
	if i := slices.IndexFunc(s.faults, func(f fault) bool { return f.method == "" || f.method == method }); i >= 0 {
		injected = s.faults[i].answer
		if s.faults[i].n--; s.faults[i].n == 0 {
			s.faults = slices.Delete(s.faults, i, i+1)
		}
	}
	return nil, injected, s.hook
}
