package serve

import (
	"cmp"
	"errors"
	"net/http"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// Dashboard is GET /v1/dashboard: everything the dashboard shows on one
// refresh, in one request (one unit of the client's rate limit).
type Dashboard struct {
	// GeneratedAt is when the answer was read (UTC).
	GeneratedAt time.Time          `json:"generated_at"`
	Credentials []quota.StatusView `json:"credentials"`
	Runs        []store.Run        `json:"runs"`
	Regions     []DashboardRegion  `json:"regions"`
}

// DashboardRegion is a configured region with its runs' health and the
// top DashboardEntries of its latest chart capture; Chart is null when
// none is stored.
type DashboardRegion struct {
	Region
	Health store.RegionHealth `json:"health"`
	// IntervalSeconds is the time between its scheduled runs (null:
	// unknown); Late is true when its last success (or, without one, its
	// last run) is older than twice that.
	IntervalSeconds *int64          `json:"interval_seconds"`
	Late            bool            `json:"late"`
	Chart           *DashboardChart `json:"chart"`
}

// DashboardChart is a chart capture with rank changes against the capture
// before it. PreviousCapturedAt is null when there is none.
type DashboardChart struct {
	Capture            store.Capture    `json:"capture"`
	PreviousCapturedAt *time.Time       `json:"previous_captured_at"`
	Entries            []DashboardEntry `json:"entries"`
}

// DashboardEntry is a chart entry with values computed by trendfetch:
// PreviousRank is its rank in the previous capture (null: not in it, or no
// previous capture), RankChange is PreviousRank - Rank (positive: moved up;
// null when PreviousRank is).
type DashboardEntry struct {
	store.Entry
	PreviousRank *int `json:"previous_rank"`
	RankChange   *int `json:"rank_change"`
}

func (s *server) dashboard(r *http.Request) (any, error) {
	ctx := r.Context()
	runs, err := s.o.Store.RunsPage(ctx, store.RunsQuery{Limit: DashboardRuns})
	if err != nil {
		return nil, err
	}
	d := Dashboard{GeneratedAt: s.o.Now().UTC(), Credentials: s.credentials(ctx), Runs: nonNil(runs), Regions: []DashboardRegion{}}
	for _, reg := range s.configuredRegions() {
		dr := DashboardRegion{Region: reg}
		if dr.Health, err = s.o.Store.Health(ctx, reg.Region, quota.DayStart(d.GeneratedAt)); err != nil {
			return nil, err
		}
		if reg.Interval > 0 {
			iv := int64(reg.Interval / time.Second)
			dr.IntervalSeconds = &iv
			if last := cmp.Or(dr.Health.LastSuccessAt, dr.Health.LastStartedAt); last != nil {
				dr.Late = d.GeneratedAt.Sub(*last) > 2*reg.Interval
			}
		}
		c, entries, err := s.o.Store.CaptureAt(ctx, store.CaptureQuery{Region: reg.Region})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		} else if err == nil {
			pc, pe, err := s.o.Store.CaptureAt(ctx, store.CaptureQuery{Region: reg.Region, At: c.CapturedAt.Add(-time.Microsecond)})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			dr.Chart = &DashboardChart{Capture: c, Entries: []DashboardEntry{}}
			prev := map[string]int{}
			if err == nil {
				dr.Chart.PreviousCapturedAt = &pc.CapturedAt
				for _, e := range pe {
					prev[e.VideoID] = e.Rank
				}
			}
			for _, e := range entries[:min(len(entries), DashboardEntries)] {
				de := DashboardEntry{Entry: e}
				if was, ok := prev[e.VideoID]; ok {
					change := was - e.Rank
					de.PreviousRank, de.RankChange = &was, &change
				}
				dr.Chart.Entries = append(dr.Chart.Entries, de)
			}
		}
		d.Regions = append(d.Regions, dr)
	}
	return d, nil
}
