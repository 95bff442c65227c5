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

// ControlPath is the emulator's own endpoint, never charged or logged as a request, to replay
// several trending days while it runs: GET answers {"date": "YYYY-MM-DD"} (null before any
// SetDate); POST or PUT with the form or query parameter date=DATE calls SetDate and answers
// like GET, or 400 with {"error": ...} for a bad or unloaded date.
const ControlPath = "/emulator/date"

// dated is a day's chart (videos) or one video's row of that day (videos[0]).
type dated struct {
	date   string // YYYY-MM-DD
	videos []*youtube.Video
}

// NormalizeDate turns a trending_date as written in the recorded CSVs ("17.14.11" =
// yy.dd.mm, 2017-11-14; "2020-08-12T00:00:00Z") or a plain date ("2017-11-14") into
// "YYYY-MM-DD". Anything else is an error.
func NormalizeDate(s string) (string, error) {
	for _, layout := range []string{"06.02.01", time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t.UTC().Format(time.DateOnly), nil
		}
	}
	return "", fmt.Errorf("trending date %q: want yy.dd.mm (17.14.11), YYYY-MM-DD or RFC 3339", s)
}

// LoadDays registers the recorded trending days of region, dates and charts as
// LoadCSVCharts returns them (dates in any form NormalizeDate accepts), replacing the days
// region had. Nothing is served from them until SetDate. The videos are deep-copied.
func (s *Server) LoadDays(region string, dates []string, charts map[string][]*youtube.Video) error {
	region = strings.ToUpper(region)
	var loaded []dated
	for _, d := range dates {
		key, err := NormalizeDate(d)
		if err != nil {
			return fmt.Errorf("cannot load days of %s: %w", region, err)
		}
		loaded = append(loaded, dated{key, cloneVideos(charts[d][:min(len(charts[d]), callsite.ChartMax)])})
	}
	byDate := func(a, b dated) int { return strings.Compare(a.date, b.date) }
	slices.SortStableFunc(loaded, byDate)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dayCharts[region] = loaded
	// Rebuild the statistics index; a video on several regions' charts of a date (or twice on
	// one): the first region in alphabetical order (the first row) wins.
	s.dayStats = map[string][]dated{}
	for _, r := range slices.Sorted(maps.Keys(s.dayCharts)) {
		for _, d := range s.dayCharts[r] {
			for _, v := range d.videos {
				s.dayStats[v.Id] = append(s.dayStats[v.Id], dated{d.date, []*youtube.Video{v}})
			}
		}
	}
	for id, rows := range s.dayStats {
		slices.SortStableFunc(rows, byDate)
		s.dayStats[id] = slices.CompactFunc(rows, func(a, b dated) bool { return a.date == b.date })
	}
	return nil
}

// LoadDaysFile loads every date of a recorded trending CSV with LoadDays, the region from the
// file name (RegionFromFileName). It returns the region and its dates, ascending, as YYYY-MM-DD.
func (s *Server) LoadDaysFile(path string) (region string, dates []string, err error) {
	region, f, err := openCSV(path)
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

// at returns the index of the latest of ds on or before date, -1 if none.
func at(ds []dated, date string) int {
	return sort.Search(len(ds), func(i int) bool { return ds[i].date > date }) - 1
}

// SetDate makes date (any form NormalizeDate accepts) the trending date served: every region
// loaded with LoadDays serves its chart of that date, or of its latest loaded date before it
// (none before: videoChartNotFound), and videos:batchGetStats answers with statistics as of
// that date. Regions set with SetChart only are not changed. Safe while serving.
func (s *Server) SetDate(date string) error {
	key, err := NormalizeDate(date)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dayCharts) == 0 {
		return fmt.Errorf("cannot set date %s: no recorded days loaded (LoadDays)", key)
	}
	for region, ds := range s.dayCharts {
		if i := at(ds, key); i >= 0 {
			s.charts[region] = ds[i].videos
		} else {
			delete(s.charts, region)
		}
	}
	s.date = key
	s.reindexLocked()
	return nil
}

// Date returns the trending date set by SetDate as YYYY-MM-DD ("" before any).
func (s *Server) Date() string { return get(s, func() string { return s.date }) }

// Dates returns the loaded dates of region (LoadDays), ascending, as YYYY-MM-DD.
func (s *Server) Dates(region string) []string {
	return get(s, func() (out []string) {
		for _, d := range s.dayCharts[strings.ToUpper(region)] {
			out = append(out, d.date)
		}
		return out
	})
}

// DayChart returns a deep copy of region's loaded chart of date (LoadDays; any form
// NormalizeDate accepts), nil if that date is not loaded.
func (s *Server) DayChart(region, date string) []*youtube.Video {
	key, _ := NormalizeDate(date)
	ds := get(s, func() []dated { return s.dayCharts[strings.ToUpper(region)] }) // replaced, never changed
	if i := slices.IndexFunc(ds, func(d dated) bool { return d.date == key }); i >= 0 {
		return cloneVideos(ds[i].videos)
	}
	return nil
}

// serveControl answers ControlPath.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) { // one JSON line
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost, http.MethodPut:
		err := r.ParseForm()
		if err == nil {
			err = s.SetDate(r.Form.Get("date"))
		}
		if err != nil {
			reply(http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST, PUT")
		reply(http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
		return
	}
	date := any(nil) // null before SetDate
	if d := s.Date(); d != "" {
		date = d
	}
	reply(http.StatusOK, map[string]any{"date": date})
}

// serveBatchGetStats answers GET /youtube/v3/videos:batchGetStats as of the emulator's date
// (docs/design.md §7).
func (s *Server) serveBatchGetStats(q url.Values, parts map[string]bool) (any, *errorResponse) {
	ids := multi(q, "id")
	if len(ids) == 0 {
		return nil, errMissingFilter("id")
	} else if len(ids) > callsite.MaxIDs {
		return nil, errTooManyIDs(len(ids))
	}
	resp := &youtube.BatchGetStatsResponse{Kind: "youtube#batchGetStatsResponse"}
	s.mu.Lock()
	for _, id := range ids {
		v := s.byID[id]
		if rows := s.dayStats[id]; len(rows) > 0 && s.date != "" {
			v = nil // not published yet as of the current date, unless:
			if i := at(rows, s.date); i >= 0 {
				v = rows[i].videos[0]
			}
		}
		if v != nil {
			resp.Items = append(resp.Items, project(videoStat(v), parts))
		}
	}
	s.mu.Unlock()
	return resp, nil
}

// videoStat is v as a youtube#videoStats resource.
func videoStat(v *youtube.Video) *youtube.VideoStat {
	st := &youtube.VideoStat{Kind: "youtube#videoStats", Id: v.Id, Etag: v.Etag,
		Statistics: &youtube.VideoStatsStatistics{}, Snippet: &youtube.VideoStatsSnippet{}, ContentDetails: &youtube.VideoStatsContentDetails{}}
	if vs := v.Statistics; vs != nil { // the counts v sends (JSON ignores forced fields st lacks)
		st.Statistics = &youtube.VideoStatsStatistics{ForceSendFields: slices.Clone(vs.ForceSendFields),
			ViewCount: int64(vs.ViewCount), LikeCount: int64(vs.LikeCount), CommentCount: int64(vs.CommentCount)}
	}
	if v.Snippet != nil {
		st.Snippet.PublishTime = v.Snippet.PublishedAt
	}
	if v.ContentDetails != nil {
		st.ContentDetails.Duration = v.ContentDetails.Duration
	}
	return st
}
