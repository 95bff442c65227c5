package youtubetest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/api/youtube/v3"
)

// Method names, as used by Calls, SetCost and FailNext. They are the API's own method
// names (discovery document ids without the "youtube." prefix).
const (
	MethodVideos          = "videos.list"
	MethodSearch          = "search.list"
	MethodChannels        = "channels.list"
	MethodVideoCategories = "videoCategories.list"
)

// MaxChart is the most videos a chart holds: videos.list chart=mostPopular returns at most 200
// videos, 4 pages of 50 (source: DESIGN.md §3).
const MaxChart = 200

// maxPage is the largest maxResults of videos.list (discovery document: maximum "50");
// defaultPage is its default (discovery document: default "5").
const (
	maxPage     = 50
	defaultPage = 5
)

// DefaultCosts returns a new map of the unit cost per method that a new Server charges: 1
// for videos.list, channels.list and videoCategories.list, 100 for search.list (source:
// DESIGN.md §3, the pre-2026-06-01 cost table; change it per Server with SetCost).
func DefaultCosts() map[string]int64 {
	return map[string]int64{
		MethodVideos:          1,
		MethodChannels:        1,
		MethodVideoCategories: 1,
		MethodSearch:          100,
	}
}

var pathMethods = map[string]string{
	"/youtube/v3/videos":          MethodVideos,
	"/youtube/v3/search":          MethodSearch,
	"/youtube/v3/channels":        MethodChannels,
	"/youtube/v3/videoCategories": MethodVideoCategories,
}

// Request is what the Server recorded about one request it received, for assertions in
// tests. The API key is never recorded: Query has "key" removed.
type Request struct {
	// Method is the API method ("videos.list"), or "" for a path the emulator does not serve.
	Method string
	// Query is the request's query parameters without "key".
	Query url.Values
	// Status is the HTTP status answered (0 if a hook wrote nothing).
	Status int
}

type fault struct {
	method string
	n      int
	status int
}

// Server is an in-memory emulator of the YouTube Data API v3, an http.Handler serving
// GET /youtube/v3/videos, /search, /channels and /videoCategories in the real API's JSON
// shape (the library's own youtube.* types, marshalled), so that the real
// google.golang.org/api/youtube/v3 client decodes exactly what it would from Google.
//
// It counts quota units per API key like Google (every request costs at least 1 unit,
// errors included; see DefaultCosts), enforces an optional daily limit with the real 403
// quotaExceeded body, an optional key allow-list with the real 400 keyInvalid body, and
// can inject failures. Differences from Google, on purpose: the quota never resets by
// itself (call ResetQuota); requests rejected for an invalid key or an exhausted quota
// cost nothing (no project to charge / nothing left); the "fields" and "hl" parameters are
// ignored (responses are a superset); statistics.dislikeCount is never served (the API
// stopped returning it on 2021-12-13) even when loaded data has it.
//
// All methods are safe for concurrent use. Keys are never logged or recorded.
type Server struct {
	mu         sync.Mutex
	charts     map[string][]*youtube.Video // region -> rank order
	extra      []*youtube.Video            // AddVideos
	byID       map[string]*youtube.Video
	categories map[string]*youtube.VideoCategoryListResponse // region ("" = default)
	search     []*youtube.SearchListResponse
	channels   []*youtube.Channel
	keys       map[string]bool // nil = any key (or none) is accepted
	limit      int64           // 0 = no limit
	costs      map[string]int64
	units      map[string]int64
	calls      map[string]int
	total      int
	faults     []fault
	hook       func(http.ResponseWriter, *http.Request) bool
	requests   []Request
}

// New returns an empty Server: no charts (every region answers videoChartNotFound), no
// categories, search results or channels, any API key accepted, no daily limit, costs
// DefaultCosts. Serve it with StartTest in tests or any http.Server.
func New() *Server {
	s := &Server{
		charts:     map[string][]*youtube.Video{},
		byID:       map[string]*youtube.Video{},
		categories: map[string]*youtube.VideoCategoryListResponse{},
		costs:      map[string]int64{},
		units:      map[string]int64{},
		calls:      map[string]int{},
	}
	for m, c := range DefaultCosts() {
		s.costs[m] = c
	}
	return s
}

// StartTest serves s on a new loopback httptest.Server, closed by tb.Cleanup, and returns
// its base URL without a trailing slash ("http://127.0.0.1:PORT"). Point the client at
// url+"/" (see NewService).
func (s *Server) StartTest(tb testing.TB) (url string) {
	tb.Helper()
	ts := httptest.NewServer(s)
	tb.Cleanup(ts.Close)
	return ts.URL
}

// NewService returns a real youtube/v3 client for the emulator at baseURL (as returned by
// StartTest), sending key as the "key" query parameter. It uses only WithEndpoint and
// WithAPIKey: adding option.WithHTTPClient would make the library drop the API key, since
// WithHTTPClient takes precedence over all other options. An empty key sends none.
func NewService(ctx context.Context, baseURL, key string) (*youtube.Service, error) {
	opts := []option.ClientOption{option.WithEndpoint(strings.TrimSuffix(baseURL, "/") + "/")}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	} else {
		opts = append(opts, option.WithoutAuthentication())
	}
	svc, err := youtube.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create youtube client for %s: %w", baseURL, err)
	}
	return svc, nil
}

// SetChart sets the mostPopular chart of region (an ISO 3166-1 alpha-2 code, case-
// insensitive) to videos in rank order (videos[0] is rank 1). Only the first MaxChart videos
// are kept. The videos are deep-copied, so the caller may reuse them; missing Kind and Etag
// are filled in. A nil slice removes the chart (the region then answers videoChartNotFound);
// an empty non-nil slice is a chart with no videos. Videos become findable by id (id=...)
// across all charts, the first region in alphabetical order winning for duplicates.
func (s *Server) SetChart(region string, videos []*youtube.Video) {
	region = strings.ToUpper(region)
	var chart []*youtube.Video
	if videos != nil {
		if len(videos) > MaxChart {
			videos = videos[:MaxChart]
		}
		chart = cloneVideos(videos)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if chart == nil {
		delete(s.charts, region)
	} else {
		s.charts[region] = chart
	}
	s.reindexLocked()
}

// AddVideos makes videos findable by id (videos.list id=...) without putting them in any
// chart, e.g. a video that has left the chart. Chart videos take precedence for equal ids.
// The videos are deep-copied.
func (s *Server) AddVideos(videos ...*youtube.Video) {
	c := cloneVideos(videos)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = append(s.extra, c...)
	s.reindexLocked()
}

// Chart returns a deep copy of the chart of region, nil if none is set.
func (s *Server) Chart(region string) []*youtube.Video {
	s.mu.Lock()
	chart := s.charts[strings.ToUpper(region)]
	s.mu.Unlock()
	if chart == nil {
		return nil
	}
	return cloneVideos(chart)
}

// Regions returns the regions that have a chart, sorted.
func (s *Server) Regions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.charts))
	for r := range s.charts {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func (s *Server) reindexLocked() {
	s.byID = map[string]*youtube.Video{}
	regions := make([]string, 0, len(s.charts))
	for r := range s.charts {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	for _, r := range regions {
		for _, v := range s.charts[r] {
			if _, ok := s.byID[v.Id]; !ok {
				s.byID[v.Id] = v
			}
		}
	}
	for _, v := range s.extra {
		if _, ok := s.byID[v.Id]; !ok {
			s.byID[v.Id] = v
		}
	}
}

func cloneVideos(videos []*youtube.Video) []*youtube.Video {
	out := make([]*youtube.Video, 0, len(videos))
	for _, v := range videos {
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("youtubetest: cannot marshal video %q: %v", v.Id, err)) // only on programmer error
		}
		c := new(youtube.Video)
		if err := json.Unmarshal(b, c); err != nil {
			panic(fmt.Sprintf("youtubetest: cannot unmarshal video %q: %v", v.Id, err))
		}
		// Keep zero counts that the original forced (e.g. likeCount "0").
		if v.Statistics != nil && c.Statistics != nil {
			c.Statistics.ForceSendFields = append([]string(nil), v.Statistics.ForceSendFields...)
		}
		if c.Kind == "" {
			c.Kind = "youtube#video"
		}
		if c.Etag == "" {
			c.Etag = etagOf(b)
		}
		out = append(out, c)
	}
	return out
}

// etagOf returns an ETag in the API's current style: 27 characters of unpadded base64url.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])[:27]
}

// SetKeys restricts the accepted API keys to keys. A request with any other key, or with
// none, gets the real 400 keyInvalid answer (errors[0].domain "usageLimits", reason
// "keyInvalid", status "INVALID_ARGUMENT", details reason "API_KEY_INVALID"; source:
// DESIGN.md §3) and costs no units. With no arguments every key (and none) is accepted again,
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
// quotaExceeded body (domain "youtube.quota"; recorded in
// ../shared/data/errors/mine-youtube-data__quota_exhausted.json) and costs nothing. Units
// spent so far are kept; see ResetQuota.
func (s *Server) SetDailyLimit(units int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = units
}

// SetCost sets the unit cost of method ("videos.list", ...). A cost below 1 is raised to 1:
// every request costs at least one unit (source: DESIGN.md §3).
func (s *Server) SetCost(method string, units int64) {
	if units < 1 {
		units = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.costs[method] = units
}

// ResetQuota forgets the units spent by every key, as Google's daily reset at midnight
// Pacific Time does. Call counts and the request log are kept.
func (s *Server) ResetQuota() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.units = map[string]int64{}
}

// Units returns the quota units spent by API key key ("" = requests without a key).
func (s *Server) Units(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.units[key]
}

// Calls returns how many requests method ("videos.list", ...) received, whatever their
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
// checks first. Calls accumulate: FailNext("videos.list", 2, 503) then FailNext("", 1, 500)
// fails the next two videos.list requests and then one more request.
func (s *Server) FailNext(method string, n int, status int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{method: method, n: n, status: status})
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
	cost := s.costs[method]
	if cost < 1 {
		cost = 1
	}
	if s.limit > 0 && s.units[key]+cost > s.limit {
		s.mu.Unlock()
		writeError(sw, errQuotaExceeded())
		return
	}
	s.units[key] += cost
	hook := s.hook
	failStatus := 0
	for i := range s.faults {
		f := &s.faults[i]
		if f.n > 0 && (f.method == "" || f.method == method) {
			f.n--
			failStatus = f.status
			break
		}
	}
	if failStatus != 0 {
		s.compactFaultsLocked()
	}
	s.mu.Unlock()

	if hook != nil && hook(sw, r) {
		return
	}
	if failStatus != 0 {
		writeError(sw, errStatus(failStatus))
		return
	}
	switch method {
	case MethodVideos:
		s.serveVideos(sw, r, q)
	case MethodVideoCategories:
		s.serveCategories(sw, r, q)
	case MethodSearch:
		s.serveSearch(sw, r, q)
	case MethodChannels:
		s.serveChannels(sw, r, q)
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

func writeError(w http.ResponseWriter, e errorResponse) {
	b, err := json.Marshal(e)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.Error.Code)
	_, _ = w.Write(b)
}

// writeList marshals a list response, sets its etag from the content and answers 304 when
// the request's If-None-Match equals it (still charged; DESIGN.md §3 assumes a 304 costs).
// setEtag stores the etag in the response value.
func writeList(w http.ResponseWriter, r *http.Request, resp any, setEtag func(string)) {
	b, err := json.Marshal(resp)
	if err != nil {
		writeError(w, apiError(http.StatusInternalServerError, "global", "backendError", "cannot marshal response: "+err.Error(), ""))
		return
	}
	etag := etagOf(b)
	setEtag(etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Trim(inm, `"`) == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if b, err = json.Marshal(resp); err != nil {
		writeError(w, apiError(http.StatusInternalServerError, "global", "backendError", "cannot marshal response: "+err.Error(), ""))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// parseParts splits and validates the part parameter against the json names of the
// resource's part fields (plus "id").
func parseParts(w http.ResponseWriter, q url.Values, resource any) (map[string]bool, bool) {
	raw := multi(q, "part")
	if len(raw) == 0 {
		writeError(w, errRequired("part"))
		return nil, false
	}
	valid := partNames(resource)
	parts := map[string]bool{}
	for _, p := range raw {
		if !valid[p] {
			writeError(w, errUnknownPart(p))
			return nil, false
		}
		parts[p] = true
	}
	return parts, true
}

// multi returns the values of a list parameter, which clients send either repeated
// (part=a&part=b, as google.golang.org/api does) or comma-separated (part=a,b); empty
// elements are dropped.
func multi(q url.Values, name string) []string {
	var out []string
	for _, v := range q[name] {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// partNames returns the json names of the pointer and map fields of a resource struct,
// which are its parts, plus "id".
func partNames(resource any) map[string]bool {
	t := reflect.TypeOf(resource).Elem()
	names := map[string]bool{"id": true}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if k := f.Type.Kind(); k != reflect.Pointer && k != reflect.Map {
			continue
		}
		if name := jsonName(f); name != "" {
			names[name] = true
		}
	}
	return names
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "" || tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	return name
}

// project returns a shallow copy of the resource (a pointer to struct) holding only kind,
// etag, id and the requested parts.
func project[T any](res *T, parts map[string]bool) *T {
	src := reflect.ValueOf(res).Elem()
	out := new(T)
	dst := reflect.ValueOf(out).Elem()
	t := src.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch name := jsonName(f); {
		case name == "kind" || name == "etag" || name == "id", parts[name]:
			dst.Field(i).Set(src.Field(i))
		}
	}
	return out
}

// pageToken encodes an offset the way the real API's tokens look: a protobuf with field 1 the
// offset and field 2 the direction (0 forward, 1 backward), base64url without padding.
// Offset 50 forward is "CDIQAA", offset 5 backward is "CAUQAQ", as in the recorded responses.
func pageToken(offset int, backward bool) string {
	b := binary.AppendUvarint([]byte{0x08}, uint64(offset))
	dir := byte(0)
	if backward {
		dir = 1
	}
	return base64.RawURLEncoding.EncodeToString(append(b, 0x10, dir))
}

// parsePageToken is the inverse of pageToken; ok is false for anything else.
func parsePageToken(tok string) (offset int, backward bool, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(tok, "="))
	if err != nil || len(b) < 4 || b[0] != 0x08 {
		return 0, false, false
	}
	v, n := binary.Uvarint(b[1:])
	if n <= 0 || v > 1<<20 {
		return 0, false, false
	}
	rest := b[1+n:]
	if len(rest) != 2 || rest[0] != 0x10 || rest[1] > 1 {
		return 0, false, false
	}
	return int(v), rest[1] == 1, true
}

func (s *Server) serveVideos(w http.ResponseWriter, r *http.Request, q url.Values) {
	parts, ok := parseParts(w, q, &youtube.Video{})
	if !ok {
		return
	}
	chart, ids := q.Get("chart"), multi(q, "id")
	nFilters := 0
	for _, f := range []string{"chart", "id", "myRating"} {
		if q.Get(f) != "" {
			nFilters++
		}
	}
	if nFilters != 1 {
		writeError(w, errMissingFilter("myRating, id, chart"))
		return
	}
	if q.Get("myRating") != "" {
		writeError(w, apiError(http.StatusUnauthorized, "global", "required", "Login Required.", "Authorization"))
		return
	}
	if len(ids) > 0 {
		s.serveVideoIDs(w, r, ids, parts)
		return
	}
	if chart != "mostPopular" {
		writeError(w, errInvalidValue("chart", chart, "Allowed values: [mostPopular]"))
		return
	}
	maxResults := defaultPage
	if m := q.Get("maxResults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > maxPage {
			writeError(w, errInvalidValue("maxResults", m, "Values must be within the range: [1, 50]"))
			return
		}
		maxResults = n
	}
	region := strings.ToUpper(q.Get("regionCode"))
	if region == "" {
		region = "US"
	}
	s.mu.Lock()
	all, found := s.charts[region]
	s.mu.Unlock()
	if !found {
		writeError(w, errChartNotFound())
		return
	}
	chartVideos := all
	if cat := q.Get("videoCategoryId"); cat != "" {
		chartVideos = nil
		for _, v := range all {
			if v.Snippet != nil && v.Snippet.CategoryId == cat {
				chartVideos = append(chartVideos, v)
			}
		}
	}
	start, end := 0, maxResults
	if tok := q.Get("pageToken"); tok != "" {
		off, back, ok := parsePageToken(tok)
		if !ok || off > len(chartVideos) {
			writeError(w, errInvalidPageToken())
			return
		}
		if back {
			start, end = max(off-maxResults, 0), off
		} else {
			start, end = off, off+maxResults
		}
	}
	end = min(end, len(chartVideos))
	resp := &youtube.VideoListResponse{
		Kind:     "youtube#videoListResponse",
		Items:    make([]*youtube.Video, 0, end-start),
		PageInfo: &youtube.PageInfo{TotalResults: int64(len(chartVideos)), ResultsPerPage: int64(maxResults), ForceSendFields: []string{"TotalResults", "ResultsPerPage"}},
	}
	resp.ForceSendFields = []string{"Items"}
	for _, v := range chartVideos[start:end] {
		resp.Items = append(resp.Items, serveVideo(v, parts))
	}
	if end < len(chartVideos) {
		resp.NextPageToken = pageToken(end, false)
	}
	if start > 0 {
		resp.PrevPageToken = pageToken(start, true)
	}
	writeList(w, r, resp, func(e string) { resp.Etag = e })
}

func (s *Server) serveVideoIDs(w http.ResponseWriter, r *http.Request, ids []string, parts map[string]bool) {
	if len(ids) > maxPage {
		writeError(w, errInvalidValue("id", strconv.Itoa(len(ids))+" ids", "At most 50 ids may be requested."))
		return
	}
	resp := &youtube.VideoListResponse{Kind: "youtube#videoListResponse", Items: []*youtube.Video{}}
	resp.ForceSendFields = []string{"Items"}
	s.mu.Lock()
	for _, id := range ids {
		if v, ok := s.byID[id]; ok {
			resp.Items = append(resp.Items, serveVideo(v, parts))
		}
	}
	s.mu.Unlock()
	n := int64(len(resp.Items))
	resp.PageInfo = &youtube.PageInfo{TotalResults: n, ResultsPerPage: n, ForceSendFields: []string{"TotalResults", "ResultsPerPage"}}
	writeList(w, r, resp, func(e string) { resp.Etag = e })
}

// serveVideo projects v onto parts and drops dislikeCount, which the API no longer returns.
func serveVideo(v *youtube.Video, parts map[string]bool) *youtube.Video {
	out := project(v, parts)
	if out.Statistics != nil {
		st := *out.Statistics
		st.DislikeCount = 0
		st.ForceSendFields = nil
		for _, f := range out.Statistics.ForceSendFields {
			if f != "DislikeCount" {
				st.ForceSendFields = append(st.ForceSendFields, f)
			}
		}
		out.Statistics = &st
	}
	return out
}
