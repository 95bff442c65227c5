// Package callsite is the one table of the YouTube Data API calls trendfetch
// makes (its call sites) and of the default quota buckets they charge. A row
// holds a call's method, path, Google cost and bucket, default charges and
// policy, which setting makes a run send it and how many calls a day of runs
// sends. Config defaults and checks, plan, the fetch pipeline and the
// emulator all read the rows.
//
// Adding a call site is one row plus its handler (docs/design.md, "Adding
// a call site", lists the steps).
//
// Sources: YouTube Data API "determine quota cost" page and revision history
// of 2026-06-01 and 2026-06-03, as summarised in docs/design.md §3 and §4.
package callsite

import (
	"maps"
	"math"
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

// Limits of the API (docs/design.md §3).
const (
	// ChartMax is the most videos chart=mostPopular returns: 200, 4 pages of 50.
	ChartMax = 200
	// MaxIDs is the most ids one videos.list, channels.list or
	// videos.batchGetStats call takes, and the largest maxResults of
	// videos.list and search.list (discovery document: maximum "50").
	MaxIDs = 50
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
// trendfetch's limiter charges by default, its default policy, and when and
// how often a run sends it.
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
	// Calls is how many calls runs runs of one region send in a day of
	// length day, before retries (runs > 0). A configuration enables the
	// call site when one run may send a call (Enabled).
	Calls func(u Use, runs int64, day time.Duration) Range
	// Why names the setting that makes runs send the call, for the error
	// when an enabled call site has no cost; "" when a run skips the call
	// without a cost (its step is off).
	Why string
	// PerCredential: the calls are capped per credential whatever the
	// regions, so Calls counts every region's runs together.
	PerCredential bool
}

// Enabled reports whether a configuration asking u makes runs send this call.
func (s Site) Enabled(u Use) bool { return s.Calls(u, 1, 24*time.Hour).Most > 0 }

// Use is what a configuration asks of the API in one region's runs, as the
// rows' Calls read it (package config builds it: Config.Use).
type Use struct {
	// Charts is the charts a run fetches (the region's and its category
	// charts); PageSize is their maxResults.
	Charts, PageSize int64
	// Searches counts the configured searches; SearchPages is their
	// max_pages summed.
	Searches, SearchPages int64
	// StatsTrackFor (0: off) and StatsEvery are stats.track_for and stats.every.
	StatsTrackFor, StatsEvery time.Duration
	// ChannelsRefresh and CategoriesRefresh are channels.refresh and
	// categories.refresh, 0 when off.
	ChannelsRefresh, CategoriesRefresh time.Duration
	// TextRefreshPerDay caps videos.list.refresh calls (store.refresh_per_day
	// under store.policy amended; 0: off).
	TextRefreshPerDay int64
}

// Range is a number of calls or units in a day: the least, the expected and
// the most.
type Range struct {
	Least    int64 `json:"least"`
	Expected int64 `json:"expected"`
	Most     int64 `json:"most"`
}

// Add returns r plus o.
func (r Range) Add(o Range) Range {
	return Range{r.Least + o.Least, r.Expected + o.Expected, r.Most + o.Most}
}

// Times returns r times n.
func (r Range) Times(n int64) Range { return Range{r.Least * n, r.Expected * n, r.Most * n} }

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
		Fetches: "channel enrichment (channels.refresh): titles and statistics of charting channels, 50 ids a call",
		Calls:   channelCalls, Why: "channels.enabled is true"},
	{Name: SearchList, Path: "/youtube/v3/search", Units: 100,
		Charges: map[string]int64{BucketUnits: 100, BucketSearch: 1}, Policy: FailClosed,
		Fetches: "configured searches (searches:): video ids matching a query, a page of 50 a call",
		Calls:   searchCalls, Why: "searches are configured"},
	{Name: CategoriesList, Path: "/youtube/v3/videoCategories", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "a region's category names (categories.refresh), one call a region",
		Calls:   categoryCalls, Why: "categories.enabled is true"},
	{Name: VideosBatchGetStats, Path: "/youtube/v3/videos:batchGetStats", Units: 1,
		Charges: map[string]int64{BucketStats: 1}, Policy: FailOpen, GoogleBucket: BucketStats,
		Fetches: "statistics of videos followed after they left the chart (stats.track_for), 50 ids a call",
		Calls:   statsCalls},
	{Name: VideosList, Path: "/youtube/v3/videos", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "chart=mostPopular pages (and category charts), and details of search hits, 50 videos a call",
		Calls:   chartCalls, Why: "every run fetches the chart"},
	{Name: VideosListRefresh, Path: "/youtube/v3/videos", Units: 1,
		Charges: map[string]int64{BucketUnits: 1}, Policy: FailOpen,
		Fetches: "text older than 30 days refreshed under store.policy amended (store.refresh_per_day calls a day), 50 ids a call",
		Calls:   textRefreshCalls, PerCredential: true,
		Why: "store.policy is amended (set store.refresh_per_day: 0 to remove old text without refreshing it)"},
}

// How many calls a day of runs sends, per call site (Site.Calls), following
// the order and rules of fetch's Runner.Run. Turnover is the share of a
// chart replaced per day: measured 21-75% (new videos a day: US 43, GB 25,
// CA 137, FR 150) in the recorded 2017 Kaggle dataset; most is the whole
// chart.
const turnoverExpected, turnoverMost = 0.5, 1.0

func ceilF(f float64) int64 { return int64(math.Ceil(f - 1e-9)) }

// chartCalls: every chart sends at least one page, a full one (the usual)
// all; then the search hits not already fetched in the run (least: none new).
func chartCalls(u Use, runs int64, _ time.Duration) Range {
	pages := ceilF(float64(ChartMax) / float64(max(u.PageSize, 1)))
	return Range{1, pages, pages}.Times(u.Charts * runs).Add(Range{0, u.SearchPages, u.SearchPages}.Times(runs))
}

// searchCalls: up to max_pages pages a search.
func searchCalls(u Use, runs int64, _ time.Duration) Range {
	return Range{u.Searches, u.SearchPages, u.SearchPages}.Times(runs)
}

// statsCalls: videos that left the chart within track_for, each sampled at
// most once per stats.every and per run; the last batch of a run may be
// short (most: one more a run).
func statsCalls(u Use, runs int64, day time.Duration) Range {
	if u.StatsTrackFor <= 0 {
		return Range{}
	}
	interval, perDay := day/time.Duration(runs), float64(runs)
	if u.StatsEvery > interval {
		perDay = float64(runs) / math.Ceil(float64(u.StatsEvery)/float64(interval))
	}
	calls := func(turnover float64, slack int64) int64 {
		followed := ChartMax * turnover * u.StatsTrackFor.Hours() / 24
		return min(ceilF(followed*perDay/MaxIDs)+slack, runs*ceilF(followed/MaxIDs))
	}
	return Range{0, calls(turnoverExpected, 0), calls(turnoverMost, runs)}
}

// channelCalls: the channels of fetched videos whose data is older than
// channels.refresh: new ones (turnover) and each known one once per refresh.
func channelCalls(u Use, runs int64, day time.Duration) Range {
	if u.ChannelsRefresh <= 0 {
		return Range{}
	}
	seen := float64(ChartMax + u.SearchPages*MaxIDs)
	calls := func(turnover float64) int64 {
		stale := ChartMax*turnover + seen*float64(day)/float64(max(u.ChannelsRefresh, day))
		return min(ceilF(stale/MaxIDs)+1, runs*ceilF(seen/MaxIDs))
	}
	return Range{0, calls(turnoverExpected), calls(turnoverMost)}
}

// categoryCalls: a region's categories once per categories.refresh.
func categoryCalls(u Use, runs int64, day time.Duration) Range {
	if u.CategoriesRefresh <= 0 {
		return Range{}
	}
	due := min(runs, ceilF(float64(day)/float64(u.CategoriesRefresh)))
	return Range{0, due, due}
}

// textRefreshCalls is the text refresh of store.policy amended, capped per
// credential at store.refresh_per_day calls in any 24 hours whatever the
// regions (runs counts all of them; a run checks the cap once before it
// starts). Least: no text older than 30 days (a database younger than
// that); expected: the cap, reached by any database older than 30 days that
// follows more than a few regions, since refreshed text ages again; most:
// the cap in each 24 hours the day holds the start of (a 25-hour day two).
// Runs of different regions are assumed not to overlap (staggered), or each
// could spend the cap.
func textRefreshCalls(u Use, runs int64, day time.Duration) Range {
	most := u.TextRefreshPerDay * min(runs, ceilF(day.Hours()/24))
	return Range{0, min(most, ceilF(float64(u.TextRefreshPerDay)*day.Hours()/24)), most}
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
	s.Charges = maps.Clone(s.Charges)
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
