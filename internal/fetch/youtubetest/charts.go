package youtubetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// SetChart sets the mostPopular chart of region (an ISO 3166-1 alpha-2 code, case-
// insensitive) to videos in rank order (videos[0] is rank 1). Only the first callsite.ChartMax (200) videos
// are kept. The videos are deep-copied, so the caller may reuse them; missing Kind and Etag
// are filled in. A nil slice removes the chart (the region then answers videoChartNotFound);
// an empty non-nil slice is a chart with no videos. Videos become findable by id (id=...)
// across all charts, the first region in alphabetical order winning for duplicates.
func (s *Server) SetChart(region string, videos []*youtube.Video) {
	region = strings.ToUpper(region)
	var chart []*youtube.Video
	if videos != nil {
		if len(videos) > callsite.ChartMax {
			videos = videos[:callsite.ChartMax]
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
	return slices.Sorted(maps.Keys(s.charts))
}

func (s *Server) reindexLocked() {
	s.byID = map[string]*youtube.Video{}
	for _, r := range slices.Sorted(maps.Keys(s.charts)) {
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
