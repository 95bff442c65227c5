package youtubetest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"google.golang.org/api/option"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// defaultPage is the default maxResults of videos.list (discovery document: default "5").
const defaultPage = 5

// pathMethods maps a REST path to its API method: the first call site of
// the path by name (videos.list, not its refresh call site videos.list.refresh).
var pathMethods = func() map[string]string {
	out := map[string]string{}
	for _, site := range callsite.All() {
		if _, ok := out[site.Path]; !ok {
			out[site.Path] = site.Name
		}
	}
	return out
}()

// Request is what the Server recorded about one request it received, for assertions in
// tests. The API key is never recorded: Query has "key" removed.
type Request struct {
	// Method is the API method (e.g. callsite.VideosList), or "" for a path the emulator does not serve.
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
	answer Answer // when set, instead of status
}

// Server is the emulator (see the package doc), an http.Handler (ServeHTTP) answering in
// the library's own youtube.* types, marshalled. Every request costs its call site's
// callsite.Site.Units, errors included. Differences from Google, on purpose: the quota
// never resets by itself (call ResetQuota); requests rejected for an invalid key or an
// exhausted quota cost nothing (no project to charge / nothing left); the "fields" and
// "hl" parameters are ignored (responses are a superset); statistics.dislikeCount is
// never served (the API stopped returning it on 2021-12-13) even when loaded data has it.
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
	units      map[string]int64
	calls      map[string]int
	total      int
	faults     []fault
	hook       func(http.ResponseWriter, *http.Request) bool
	requests   []Request
	// days are the recorded trending days and the date served (days.go).
	days days
	// bucketUnits counts units of methods with their own Google bucket
	// (callsite.Site.GoogleBucket): bucket -> key -> units.
	bucketUnits map[string]map[string]int64

	// searchVideos are the videos the search pages find, by id (SetSearchPages).
	searchVideos map[string]*youtube.Video
}

// New returns an empty Server: no charts (every region answers videoChartNotFound), no
// categories, search results or channels, any API key accepted, no daily limit. Serve it with StartTest in tests or any http.Server.
func New() *Server {
	return &Server{
		charts:     map[string][]*youtube.Video{},
		byID:       map[string]*youtube.Video{},
		categories: map[string]*youtube.VideoCategoryListResponse{},
		units:      map[string]int64{},
		calls:      map[string]int{},
	}
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
