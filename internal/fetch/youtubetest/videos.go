package youtubetest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

func (s *Server) serveVideos(w http.ResponseWriter, r *http.Request, q url.Values) {
	parts, ok := parseParts(w, q, &youtube.Video{})
	if !ok {
		return
	}
	chart, ids := q.Get("chart"), multi(q, "id")
	if filters(q, "chart", "id", "myRating") != 1 {
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
		if err != nil || n < 1 || n > callsite.MaxIDs {
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
		PageInfo: pageInfo(int64(len(chartVideos)), int64(maxResults)),
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
	if len(ids) > callsite.MaxIDs {
		writeError(w, errTooManyIDs(len(ids)))
		return
	}
	resp := &youtube.VideoListResponse{Kind: "youtube#videoListResponse", Items: []*youtube.Video{}}
	resp.ForceSendFields = []string{"Items"}
	s.mu.Lock()
	for _, id := range ids {
		if v, ok := s.byID[id]; ok {
			resp.Items = append(resp.Items, serveVideo(v, parts))
		} else if v, ok := s.searchVideos[id]; ok {
			resp.Items = append(resp.Items, serveVideo(v, parts))
		}
	}
	s.mu.Unlock()
	resp.PageInfo = pageInfo(int64(len(resp.Items)), int64(len(resp.Items)))
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
