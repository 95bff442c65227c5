package youtubetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// ControlPath is the emulator's own control endpoint (not part of the YouTube API, never
// charged or logged as a request): GET returns {"date": "YYYY-MM-DD"} (null before any
// SetDate), and POST or PUT with the form or query parameter date=DATE calls SetDate and
// answers like GET (400 with {"error": ...} for a bad or unloaded date). It lets a test or a
// demo replay several trending days of a running emulator.
const ControlPath = "/emulator/date"

// days is the recorded trending days loaded with LoadDays, and the date served.
type days struct {
	// charts: region -> ascending days of its chart.
	charts map[string][]datedChart
	// stats: video id -> its rows, ascending by date (for videos:batchGetStats).
	stats map[string][]datedVideo
	// current is the date served ("" until SetDate).
	current string
}

type datedChart struct {
	date   string // YYYY-MM-DD
	videos []*youtube.Video
}

type datedVideo struct {
	date string
	v    *youtube.Video
}

// NormalizeDate turns a trending_date as written in the recorded CSVs ("17.14.11" =
// yy.dd.mm, 2017-11-14; "2020-08-12T00:00:00Z") or a plain date ("2017-11-14") into
// "YYYY-MM-DD". Anything else is an error.
func NormalizeDate(s string) (string, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse("06.02.01", s); err == nil {
		return t.Format(time.DateOnly), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.Format(time.DateOnly), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC().Format(time.DateOnly), nil
	}
	return "", fmt.Errorf("trending date %q: want yy.dd.mm (17.14.11), YYYY-MM-DD or RFC 3339", s)
}

// LoadDays registers the recorded trending days of region, dates and charts as returned
// by LoadCSVCharts (dates in any form NormalizeDate accepts). Nothing is served from them
// until SetDate picks a date: then region's chart is its chart of that date (or of the
// latest loaded date before it), and videos:batchGetStats answers every loaded video with
// its statistics of that date (its latest row on or before it). Loading a region again
// replaces its days. The videos are deep-copied.
func (s *Server) LoadDays(region string, dates []string, charts map[string][]*youtube.Video) error {
	region = strings.ToUpper(region)
	var loaded []datedChart
	for _, d := range dates {
		key, err := NormalizeDate(d)
		if err != nil {
			return fmt.Errorf("cannot load days of %s: %w", region, err)
		}
		chart := charts[d]
		if len(chart) > callsite.ChartMax {
			chart = chart[:callsite.ChartMax]
		}
		loaded = append(loaded, datedChart{date: key, videos: cloneVideos(chart)})
	}
	sort.SliceStable(loaded, func(i, j int) bool { return loaded[i].date < loaded[j].date })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.days.charts == nil {
		s.days.charts = map[string][]datedChart{}
	}
	s.days.charts[region] = loaded
	s.reindexDaysLocked()
	return nil
}

// reindexDaysLocked rebuilds the statistics index from every region's days; for a video
// on several regions' charts of one date the first region in alphabetical order wins.
func (s *Server) reindexDaysLocked() {
	s.days.stats = map[string][]datedVideo{}
	seen := map[string]bool{} // id + date
	for _, r := range slices.Sorted(maps.Keys(s.days.charts)) {
		for _, d := range s.days.charts[r] {
			for _, v := range d.videos {
				if k := v.Id + "\x00" + d.date; !seen[k] {
					seen[k] = true
					s.days.stats[v.Id] = append(s.days.stats[v.Id], datedVideo{date: d.date, v: v})
				}
			}
		}
	}
	for _, rows := range s.days.stats {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].date < rows[j].date })
	}
}

// SetDate makes date (any form NormalizeDate accepts) the emulator's trending date: every
// region loaded with LoadDays serves its chart of that date, or of its latest loaded date
// before it (a region with no day on or before it has no chart: videoChartNotFound), and
// videos:batchGetStats answers with statistics as of that date. Regions set with SetChart
// only are not changed. It is safe to call while requests are being served.
func (s *Server) SetDate(date string) error {
	key, err := NormalizeDate(date)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.days.charts) == 0 {
		return fmt.Errorf("cannot set date %s: no recorded days loaded (LoadDays)", key)
	}
	for region, ds := range s.days.charts {
		i := sort.Search(len(ds), func(i int) bool { return ds[i].date > key }) - 1
		if i < 0 {
			delete(s.charts, region)
			continue
		}
		s.charts[region] = ds[i].videos
	}
	s.days.current = key
	s.reindexLocked()
	return nil
}

// Date returns the trending date set by SetDate as YYYY-MM-DD ("" before any).
func (s *Server) Date() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.days.current
}

// Dates returns the loaded dates of region (LoadDays), ascending, as YYYY-MM-DD.
func (s *Server) Dates(region string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.days.charts[strings.ToUpper(region)] {
		out = append(out, d.date)
	}
	return out
}

// serveControl answers ControlPath.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost, http.MethodPut:
		err := r.ParseForm()
		if err == nil {
			err = s.SetDate(r.Form.Get("date"))
		}
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST, PUT")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "method not allowed"})
		return
	}
	var date *string
	if d := s.Date(); d != "" {
		date = &d
	}
	_ = json.NewEncoder(w).Encode(map[string]*string{"date": date})
}

// statsAt returns video id as of the current date: its latest loaded row on or before
// it; without days loaded (or before its first day) the video served by id (charts,
// AddVideos). nil when unknown. Caller holds s.mu.
func (s *Server) statsAtLocked(id string) *youtube.Video {
	if rows := s.days.stats[id]; len(rows) > 0 && s.days.current != "" {
		i := sort.Search(len(rows), func(i int) bool { return rows[i].date > s.days.current }) - 1
		if i >= 0 {
			return rows[i].v
		}
		return nil // not published yet as of the current date
	}
	return s.byID[id]
}

// serveBatchGetStats answers GET /youtube/v3/videos:batchGetStats: part (statistics,
// contentDetails, snippet; required), id (1 to 50). Items are in request order, unknown
// ids absent, each a youtube#videoStats with statistics as of the emulator's date (see
// SetDate): viewCount, likeCount, commentCount, each absent when the recorded data says
// the API omitted it (ratings or comments disabled); snippet.publishTime;
// contentDetails.duration when known.
func (s *Server) serveBatchGetStats(w http.ResponseWriter, r *http.Request, q url.Values) {
	parts, ok := parseParts(w, q, &youtube.VideoStat{})
	if !ok {
		return
	}
	ids := multi(q, "id")
	if len(ids) == 0 {
		writeError(w, errMissingFilter("id"))
		return
	}
	if len(ids) > callsite.MaxIDs {
		writeError(w, errTooManyIDs(len(ids)))
		return
	}
	resp := &youtube.BatchGetStatsResponse{Kind: "youtube#batchGetStatsResponse", Items: []*youtube.VideoStat{}}
	resp.ForceSendFields = []string{"Items"}
	s.mu.Lock()
	for _, id := range ids {
		v := s.statsAtLocked(id)
		if v == nil {
			continue
		}
		resp.Items = append(resp.Items, project(videoStat(v), parts))
	}
	s.mu.Unlock()
	writeList(w, r, resp, func(e string) { resp.Etag = e })
}

// videoStat is v as a youtube#videoStats resource.
func videoStat(v *youtube.Video) *youtube.VideoStat {
	st := &youtube.VideoStat{Kind: "youtube#videoStats", Id: v.Id, Etag: v.Etag,
		Statistics: &youtube.VideoStatsStatistics{}, Snippet: &youtube.VideoStatsSnippet{}, ContentDetails: &youtube.VideoStatsContentDetails{}}
	if vs := v.Statistics; vs != nil {
		forced := map[string]bool{}
		for _, f := range vs.ForceSendFields {
			forced[f] = true
		}
		for _, c := range []struct {
			name string
			val  uint64
			dst  *int64
		}{{"ViewCount", vs.ViewCount, &st.Statistics.ViewCount}, {"LikeCount", vs.LikeCount, &st.Statistics.LikeCount}, {"CommentCount", vs.CommentCount, &st.Statistics.CommentCount}} {
			if c.val != 0 || forced[c.name] {
				*c.dst = int64(c.val)
				st.Statistics.ForceSendFields = append(st.Statistics.ForceSendFields, c.name)
			}
		}
	}
	if v.Snippet != nil {
		st.Snippet.PublishTime = v.Snippet.PublishedAt
	}
	if v.ContentDetails != nil {
		st.ContentDetails.Duration = v.ContentDetails.Duration
	}
	return st
}

// LoadDaysFile reads a recorded trending CSV (region from the file name, see
// RegionFromFileName) and loads every date of it with LoadDays. It returns the region and
// its dates, ascending, as YYYY-MM-DD.
func (s *Server) LoadDaysFile(path string) (region string, dates []string, err error) {
	region, f, err := openRegionFile(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	raw, charts, err := LoadCSVCharts(f, region)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.LoadDays(region, raw, charts); err != nil {
		return "", nil, err
	}
	return region, s.Dates(region), nil
}
