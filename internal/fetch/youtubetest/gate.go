package youtubetest

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// SetKeys restricts the accepted API keys to keys. A request with any other key, or with
// none, gets the real 400 keyInvalid answer (errors[0].domain "usageLimits", reason
// "keyInvalid", status "INVALID_ARGUMENT", details reason "API_KEY_INVALID"; source:
// docs/design.md §3) and costs no units. With no arguments every key (and none) is accepted again,
// which is the default.
func (s *Server) SetKeys(keys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(keys) == 0 {
		s.keys = nil
		return
	}
	s.keys = map[string]bool{}
	for _, k := range keys {
		s.keys[k] = true
	}
}

// SetDailyLimit sets the units each API key may spend (0, the default, means unlimited).
// A request whose cost would take its key past the limit is answered with the real HTTP 403
// quotaExceeded body (domain "youtube.quota"; recorded from the API, docs/design.md §7) and
// costs nothing. Units
// spent so far are kept; see ResetQuota.
func (s *Server) SetDailyLimit(units int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = units
}

// ResetQuota forgets the units spent by every key, as Google's daily reset at midnight
// Pacific Time does. Call counts and the request log are kept.
func (s *Server) ResetQuota() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.units = map[string]int64{}
	s.bucketUnits = nil
}

// Units returns the quota units spent by API key key ("" = requests without a key) from
// the project's shared daily units (every method without its own Google bucket).
func (s *Server) Units(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.units[key]
}

// BucketUnits returns the units key spent from a method's own Google bucket, e.g.
// callsite.BucketStats for videos.batchGetStats (see callsite.Site.GoogleBucket).
func (s *Server) BucketUnits(bucket, key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bucketUnits[bucket][key]
}

// Calls returns how many requests method (a callsite name) received, whatever their
// outcome (errors, rejected keys and quota denials included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// TotalCalls returns how many requests the Server received, on any path.
func (s *Server) TotalCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Requests returns a copy of the log of requests received, oldest first (keys removed).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = Request{Method: r.Method, Query: cloneValues(r.Query), Status: r.Status}
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// FailNext makes the next n requests to method ("" = any method) fail with HTTP status and
// a realistic body: 500 and other 5xx "backendError" (status INTERNAL; 503 UNAVAILABLE),
// 429 "rateLimitExceeded", 403 "quotaExceeded", anything else "badRequest". Injected
// failures are charged like real errors (the cost of the method) and pass the key and quota
// checks first. Calls accumulate: FailNext(callsite.VideosList, 2, 503) then FailNext("", 1, 500)
// fails the next two videos.list requests and then one more request.
func (s *Server) FailNext(method string, n int, status int) {
	s.queueFault(fault{method: method, n: n, status: status})
}

// AnswerNext makes the next n requests to method ("" = any method) get the
// quota answer a (PerDay429, PerMinute429, QuotaExceeded,
// DailyLimitExceeded), charged and queued like FailNext's failures.
func (s *Server) AnswerNext(method string, n int, a Answer) {
	s.queueFault(fault{method: method, n: n, answer: a})
}

func (s *Server) queueFault(f fault) {
	if f.n > 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.faults = append(s.faults, f)
	}
}

// SetHook installs h (nil removes it). It runs for every request to a served method after
// the key and quota checks and after the units are charged, before any injected failure and
// before the emulator answers. h may delay (sleep, wait on the request context), write its
// own answer, or break the connection (e.g. via http.Hijacker or a short body); if it
// returns true the emulator writes nothing more. h is called without the Server's lock held.
func (s *Server) SetHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// statusWriter records the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (Hijack, Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP answers one API request. Paths and parameters (list parameters such as part and
// id may be repeated or comma-separated; "key" may also come as the X-Goog-Api-Key header):
//
//   - GET /youtube/v3/videos: part (required; unknown parts are 400 unknownPart) and exactly
//     one of chart=mostPopular or id. With chart: regionCode (default US; no chart set is 400
//     videoChartNotFound), videoCategoryId (keeps chart videos whose snippet.categoryId
//     matches, in rank order), maxResults 1..50 (default 5), pageToken (as returned in
//     nextPageToken/prevPageToken, e.g. "CDIQAA" = offset 50; anything else is 400
//     invalidPageToken). nextPageToken is absent on the last page; pageInfo.totalResults is
//     the chart length and resultsPerPage the maxResults asked. With id: up to 50 ids,
//     answered in request order, unknown ids absent.
//   - GET /youtube/v3/videoCategories: part, and regionCode or id (see SetCategories).
//   - GET /youtube/v3/search: part; serves the pages of SetSearchPages.
//   - GET /youtube/v3/channels: part, and id or forHandle (see SetChannels).
//
// Every response carries kind and an etag computed from its content; a request whose
// If-None-Match equals it gets 304 Not Modified (still charged). Other paths are 404, other
// HTTP methods 405, both uncharged.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ControlPath {
		s.serveControl(w, r)
		return
	}
	method := pathMethods[strings.TrimSuffix(r.URL.Path, "/")]
	q := r.URL.Query()
	key := q.Get("key")
	if key == "" {
		key = r.Header.Get("X-Goog-Api-Key")
	}
	q.Del("key")
	sw := &statusWriter{ResponseWriter: w}
	idx := s.begin(method, q)
	defer func() { s.finish(idx, sw.status) }()

	if method == "" {
		writeError(sw, apiError(http.StatusNotFound, "global", "notFound", "Not Found", ""))
		return
	}
	if r.Method != http.MethodGet {
		writeError(sw, apiError(http.StatusMethodNotAllowed, "global", "httpMethodNotAllowed", "Method Not Allowed", ""))
		return
	}

	s.mu.Lock()
	if s.keys != nil && !s.keys[key] {
		s.mu.Unlock()
		writeError(sw, errKeyInvalid())
		return
	}
	site, _ := callsite.Lookup(method)
	if cost, bucket := site.Units, site.GoogleBucket; bucket != "" {
		// The method's own Google bucket: not the shared units, not their limit.
		if s.bucketUnits == nil {
			s.bucketUnits = map[string]map[string]int64{}
		}
		if s.bucketUnits[bucket] == nil {
			s.bucketUnits[bucket] = map[string]int64{}
		}
		s.bucketUnits[bucket][key] += cost
	} else {
		if s.limit > 0 && s.units[key]+cost > s.limit {
			s.mu.Unlock()
			writeError(sw, errQuotaExceeded())
			return
		}
		s.units[key] += cost
	}
	hook := s.hook
	var failed *fault
	for i := range s.faults {
		f := &s.faults[i]
		if f.n > 0 && (f.method == "" || f.method == method) {
			f.n--
			failed = &fault{status: f.status, answer: f.answer}
			break
		}
	}
	if failed != nil {
		s.compactFaultsLocked()
	}
	s.mu.Unlock()

	if hook != nil && hook(sw, r) {
		return
	}
	switch {
	case failed != nil && failed.answer == PerMinute429:
		sw.Header().Set("Retry-After", "1")
		fallthrough
	case failed != nil && failed.answer != 0:
		writeError(sw, answerBody(failed.answer, method))
		return
	case failed != nil:
		writeError(sw, errStatus(failed.status))
		return
	}
	switch method {
	case callsite.VideosList:
		s.serveVideos(sw, r, q)
	case callsite.CategoriesList:
		s.serveCategories(sw, r, q)
	case callsite.SearchList:
		s.serveSearch(sw, r, q)
	case callsite.ChannelsList:
		s.serveChannels(sw, r, q)
	case callsite.VideosBatchGetStats:
		s.serveBatchGetStats(sw, r, q)
	}
}

func (s *Server) compactFaultsLocked() {
	kept := s.faults[:0]
	for _, f := range s.faults {
		if f.n > 0 {
			kept = append(kept, f)
		}
	}
	s.faults = kept
}

// begin counts the call and logs it; it returns the log index.
func (s *Server) begin(method string, q url.Values) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	if method != "" {
		s.calls[method]++
	}
	s.requests = append(s.requests, Request{Method: method, Query: cloneValues(q)})
	return len(s.requests) - 1
}

func (s *Server) finish(idx, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if idx < len(s.requests) {
		s.requests[idx].Status = status
	}
}
