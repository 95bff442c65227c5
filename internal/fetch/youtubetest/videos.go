package youtubetest

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// SetChart sets the mostPopular chart of region (ISO 3166-1 alpha-2, case-insensitive) to
// videos in rank order, deep-copied, cut to callsite.ChartMax, missing Kind and Etag filled
// in. A nil slice removes the chart (videoChartNotFound); an empty one is a chart with no
// videos. Chart videos are found by id (id=...), the first region alphabetically winning.
func (s *Server) SetChart(region string, videos []*youtube.Video) {
	chart := cloneVideos(videos[:min(len(videos), callsite.ChartMax)])
	s.mu.Lock()
	defer s.mu.Unlock()
	if chart == nil {
		delete(s.charts, strings.ToUpper(region))
	} else {
		s.charts[strings.ToUpper(region)] = chart
	}
	s.reindexLocked()
}

// AddVideos makes videos findable by id (videos.list id=...) without putting them in any
// chart, e.g. a video that has left the chart; chart videos take precedence. Deep-copied.
func (s *Server) AddVideos(videos ...*youtube.Video) {
	c := cloneVideos(videos)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = append(s.extra, c...)
	s.reindexLocked()
}

// Chart returns a deep copy of the chart of region, nil if none is set.
func (s *Server) Chart(region string) []*youtube.Video {
	return cloneVideos(get(s, func() []*youtube.Video { return s.charts[strings.ToUpper(region)] }))
}

// reindexLocked rebuilds byID: the charts by region, then AddVideos.
func (s *Server) reindexLocked() {
	var all [][]*youtube.Video
	for _, r := range slices.Sorted(maps.Keys(s.charts)) {
		all = append(all, s.charts[r])
	}
	s.byID = map[string]*youtube.Video{}
	for _, v := range slices.Concat(append(all, s.extra)...) {
		if _, ok := s.byID[v.Id]; !ok {
			s.byID[v.Id] = v
		}
	}
}

// cloneVideos deep-copies videos, nil staying nil, filling in missing Kind and Etag.
func cloneVideos(videos []*youtube.Video) []*youtube.Video {
	if videos == nil {
		return nil
	}
	out := make([]*youtube.Video, 0, len(videos))
	for _, v := range videos {
		if v == nil {
			continue
		}
		b, _ := json.Marshal(v) // a youtube.Video always marshals, and unmarshals from its JSON
		c := new(youtube.Video)
		_ = json.Unmarshal(b, c)
		if v.Statistics != nil { // keep the zero counts the original forced (likeCount "0")
			c.Statistics.ForceSendFields = slices.Clone(v.Statistics.ForceSendFields)
		}
		c.Kind, c.Etag = cmp.Or(c.Kind, "youtube#video"), cmp.Or(c.Etag, etagOf(b))
		out = append(out, c)
	}
	return out
}

// serveVideos answers GET /youtube/v3/videos (docs/design.md §7).
func (s *Server) serveVideos(q url.Values, parts map[string]bool) (any, *errorResponse) {
	chart, ids := q.Get("chart"), multi(q, "id")
	switch {
	case filters(q, "chart", "id", "myRating") != 1:
		return nil, errMissingFilter("myRating, id, chart")
	case q.Get("myRating") != "":
		return nil, apiError(http.StatusUnauthorized, "global", "required", "Login Required.", "Authorization")
	case len(ids) > callsite.MaxIDs:
		return nil, errTooManyIDs(len(ids))
	case len(ids) > 0:
		return s.videosByID(ids, parts), nil
	case chart != "mostPopular":
		return nil, errInvalidValue("chart", chart, "Allowed values: [mostPopular]")
	}
	return s.serveChart(q, parts)
}

// videosByID answers videos.list id=: the known videos of ids, in their order.
func (s *Server) videosByID(ids []string, parts map[string]bool) *youtube.VideoListResponse {
	resp := &youtube.VideoListResponse{Kind: "youtube#videoListResponse"}
	s.mu.Lock()
	for _, id := range ids {
		if v := cmp.Or(s.byID[id], s.searchVideos[id]); v != nil {
			resp.Items = append(resp.Items, serveVideo(v, parts))
		}
	}
	s.mu.Unlock()
	resp.PageInfo = pageInfo(int64(len(resp.Items)), int64(len(resp.Items)))
	return resp
}

// serveChart answers videos.list chart=mostPopular: a page of the region's chart (narrowed by
// videoCategoryId), pageToken and maxResults as the API reads them.
func (s *Server) serveChart(q url.Values, parts map[string]bool) (any, *errorResponse) {
	maxResults := defaultPage
	if m := q.Get("maxResults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > callsite.MaxIDs {
			return nil, errInvalidValue("maxResults", m, "Values must be within the range: [1, 50]")
		}
		maxResults = n
	}
	s.mu.Lock()
	videos, found := s.charts[cmp.Or(strings.ToUpper(q.Get("regionCode")), "US")]
	s.mu.Unlock()
	if !found {
		return nil, errChartNotFound
	}
	if cat := q.Get("videoCategoryId"); cat != "" {
		videos = slices.DeleteFunc(slices.Clone(videos), func(v *youtube.Video) bool { return v.Snippet == nil || v.Snippet.CategoryId != cat })
	}
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		off, ok := parsePageToken(tok)
		if !ok || off > len(videos) {
			return nil, errInvalidPageToken
		}
		start = off
	}
	end := min(start+maxResults, len(videos))
	resp := &youtube.VideoListResponse{Kind: "youtube#videoListResponse", PageInfo: pageInfo(int64(len(videos)), int64(maxResults))}
	for _, v := range videos[start:end] {
		resp.Items = append(resp.Items, serveVideo(v, parts))
	}
	if end < len(videos) {
		resp.NextPageToken = pageToken(end)
	}
	return resp, nil
}

// serveVideo projects v onto parts and drops dislikeCount, which the API no longer returns.
func serveVideo(v *youtube.Video, parts map[string]bool) *youtube.Video {
	out := project(v, parts)
	if out.Statistics != nil {
		st := *out.Statistics
		st.DislikeCount = 0
		st.ForceSendFields = slices.DeleteFunc(slices.Clone(st.ForceSendFields), func(f string) bool { return f == "DislikeCount" })
		out.Statistics = &st
	}
	return out
}

// pageToken encodes an offset the way the real API's next-page tokens look: a protobuf with field
// 1 the offset and field 2 the direction (0, forward), base64url without padding. Offset 50 is
// "CDIQAA", as in the recorded responses. The emulator serves no prevPageToken.
func pageToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString(append(binary.AppendUvarint([]byte{0x08}, uint64(offset)), 0x10, 0))
}

// parsePageToken is the inverse of pageToken; ok is false for anything else.
func parsePageToken(tok string) (offset int, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(tok, "="))
	if err != nil || len(b) < 4 || b[0] != 0x08 {
		return 0, false
	}
	v, n := binary.Uvarint(b[1:])
	if rest := b[1+max(n, 0):]; n <= 0 || v > 1<<20 || len(rest) != 2 || rest[0] != 0x10 || rest[1] != 0 {
		return 0, false
	}
	return int(v), true
}
