// Package callsite is the one table of the YouTube Data API calls trendfetch
// makes (its call sites) and of the default quota buckets they charge.
// Config defaults, the fetch pipeline and the emulator all derive from it:
// adding a call site is one entry here plus its handler.
//
// Sources: YouTube Data API "determine quota cost" page and revision history
// of 2026-06-01 and 2026-06-03, as summarised in docs/design.md §3 and §4.
package callsite

import (
	"sort"
	"time"
)

// Policy is what a call site does when the quota limiter's backend is
// unreachable.
type Policy string

const (
	// FailOpen makes the call unmetered, logs a warning and counts it on the run.
	FailOpen Policy = "fail-open"
	// FailClosed stops the run as a denial (exit 75, reason "limiter unavailable").
	FailClosed Policy = "fail-closed"
)

// Call site names: the API's own method names (discovery document ids
// without the "youtube." prefix). They key the cost table, the policies,
// run records' call counts and the emulator's counters.
const (
	VideosList     = "videos.list"
	SearchList     = "search.list"
	ChannelsList   = "channels.list"
	CategoriesList = "videoCategories.list"
	// VideosBatchGetStats is videos.batchGetStats (since 2026-06-03):
	// statistics, duration and publish time of up to 50 ids a call.
	VideosBatchGetStats = "videos.batchGetStats"
	// VideosListRefresh is videos.list id= sent to refresh stored text
	// older than 30 days (store.policy amended): the API method
	// videos.list, its own call site so that it is metered, capped and
	// counted apart from the chart.
	VideosListRefresh = "videos.list.refresh"
)

// Default bucket names (docs/design.md §4).
const (
	// BucketUnits is the project's shared daily units.
	BucketUnits = "units"
	// BucketSearch counts search.list calls so a pagination bug cannot drain the day.
	BucketSearch = "search"
	// BucketStats counts videos.batchGetStats calls, which Google charges to
	// their own daily bucket of 10,000 units, not to the shared units.
	BucketStats = "stats"
)

// Site is one call site: an API method, what Google charges for it, what
// trendfetch's limiter charges by default, and its default policy.
type Site struct {
	// Name is the API method, e.g. VideosList.
	Name string
	// Path is the REST path the client requests, e.g. "/youtube/v3/videos".
	Path string
	// Units is Google's cost of one request in quota units (the emulator
	// charges it; before 2026-06-01 search.list cost 100 of the shared
	// 10,000).
	Units int64
	// Charges is the default limiter charge: bucket name to units per call.
	Charges map[string]int64
	// Policy is the default backend-failure policy.
	Policy Policy
	// Fetches says what trendfetch uses the call for (documentation).
	Fetches string
	// GoogleBucket is the Google quota bucket Units are charged to: "" for
	// the project's shared 10,000 units a day, else the method's own
	// bucket (the emulator counts it apart: docs/design.md §3, granular quota).
	GoogleBucket string
}

// Bucket is a default quota bucket: at most Limit units per Window, or per
// Pacific quota day when Calendar.
type Bucket struct {
	Name     string
	Limit    int64
	Window   time.Duration
	Calendar bool
}

// sites is the table. Keep it sorted by Name.
var sites = []Site{
	{Name: ChannelsList, Path: "/youtube/v3/channels", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "channel enrichment (channels.refresh): titles and statistics of charting channels, 50 ids a call"},
	{Name: SearchList, Path: "/youtube/v3/search", Units: 100,
		Charges: map[string]int64{BucketUnits: 100, BucketSearch: 1}, Policy: FailClosed,
		Fetches: "configured searches (searches:): video ids matching a query, a page of 50 a call"},
	{Name: CategoriesList, Path: "/youtube/v3/videoCategories", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "a region's category names (categories.refresh), one call a region"},
	{Name: VideosBatchGetStats, Path: "/youtube/v3/videos:batchGetStats", Units: 1,
		Charges: map[string]int64{BucketStats: 1}, Policy: FailOpen, GoogleBucket: BucketStats,
		Fetches: "statistics of videos followed after they left the chart (stats.track_for), 50 ids a call"},
	{Name: VideosList, Path: "/youtube/v3/videos", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "chart=mostPopular pages (and category charts), and details of search hits, 50 videos a call"},
	{Name: VideosListRefresh, Path: "/youtube/v3/videos", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "text older than 30 days refreshed under store.policy amended (store.refresh_per_day calls a day), 50 ids a call"},
}

// buckets are the default buckets: units holds 9,500 of Google's 10,000
// daily units (headroom for ad-hoc use); search allows 95 search.list calls
// a day; stats holds 9,500 of the 10,000 units of videos.batchGetStats's
// own Google bucket.
var buckets = []Bucket{
	{Name: BucketUnits, Limit: 9500, Window: 24 * time.Hour},
	{Name: BucketSearch, Limit: 95, Window: 24 * time.Hour},
	{Name: BucketStats, Limit: 9500, Window: 24 * time.Hour},
}

// All returns every call site, sorted by name. The result is a copy.
func All() []Site {
	out := make([]Site, len(sites))
	for i, s := range sites {
		out[i] = s.clone()
	}
	return out
}

// Lookup returns the call site named name and whether it exists.
func Lookup(name string) (Site, bool) {
	for _, s := range sites {
		if s.Name == name {
			return s.clone(), true
		}
	}
	return Site{}, false
}

// Names returns every call site's name, sorted.
func Names() []string {
	out := make([]string, len(sites))
	for i, s := range sites {
		out[i] = s.Name
	}
	sort.Strings(out)
	return out
}

// Buckets returns the default buckets. The result is a copy.
func Buckets() []Bucket {
	return append([]Bucket(nil), buckets...)
}

func (s Site) clone() Site {
	c := make(map[string]int64, len(s.Charges))
	for k, v := range s.Charges {
		c[k] = v
	}
	s.Charges = c
	return s
}

// Quota presets (config quota.preset).
const (
	// PresetClassic is the default: Buckets() and each call site's Charges
	// (9,500 of Google's 10,000 units, headroom kept for ad-hoc use).
	PresetClassic = "classic"
	// PresetGoogle2026 models Google's granular quota of 2026 exactly
	// (revision history 2026-06-01 and 2026-06-03; docs/design.md §3): 10,000
	// units a Pacific day shared by every method but search.list (its own
	// 100 calls a day at 1 per call) and videos.batchGetStats (its own
	// 10,000 units a day).
	PresetGoogle2026 = "google-2026"
)

// Presets lists the preset names.
func Presets() []string { return []string{PresetClassic, PresetGoogle2026} }

// Preset returns the buckets and the charge of each call site of preset
// name, and false for an unknown name. For google-2026 every bucket is a
// calendar bucket (the Pacific day) with Google's limit, and each call site
// is charged its Units in its Google bucket: search.list 1 call in search,
// batchGetStats 1 unit in stats, the others their units in units.
func Preset(name string) ([]Bucket, map[string]map[string]int64, bool) {
	switch name {
	case "", PresetClassic:
		charges := map[string]map[string]int64{}
		for _, s := range All() {
			charges[s.Name] = s.Charges
		}
		return Buckets(), charges, true
	case PresetGoogle2026:
		charges := map[string]map[string]int64{}
		for _, s := range sites {
			switch s.Name {
			case SearchList:
				charges[s.Name] = map[string]int64{BucketSearch: 1}
			default:
				bucket := s.GoogleBucket
				if bucket == "" {
					bucket = BucketUnits
				}
				charges[s.Name] = map[string]int64{bucket: s.Units}
			}
		}
		return []Bucket{
			{Name: BucketUnits, Limit: 10_000, Calendar: true},
			{Name: BucketSearch, Limit: 100, Calendar: true},
			{Name: BucketStats, Limit: 10_000, Calendar: true},
		}, charges, true
	}
	return nil, nil, false
}
