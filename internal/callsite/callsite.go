// Package callsite is the table of the YouTube Data API calls trendfetch makes (its call sites)
// and of the default buckets they charge (docs/design.md §2, "Adding a call site"; API facts §3, §4).
package callsite

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"
)

// Policy is what a call site does when the quota limiter's backend is
// unreachable (docs/design.md §4, backend failure).
type Policy string

const (
	// FailOpen makes the call unmetered, logs a warning and counts it on the run.
	FailOpen Policy = "fail-open"
	// FailClosed stops the run as a denial (exit 75, reason "limiter unavailable").
	FailClosed Policy = "fail-closed"
	// Reserve spends the call from this host's outage reserve (quota.reserve), held while the
	// backend answered; when it is spent the run stops as FailClosed does, saying so.
	Reserve Policy = "reserve"
)

// Call site names: the API's method names (discovery document ids without "youtube."). They key
// costs, policies, run records' call counts and the emulator's counters.
const (
	VideosList     = "videos.list"
	SearchList     = "search.list"
	ChannelsList   = "channels.list"
	CategoriesList = "videoCategories.list"
	// VideosBatchGetStats is videos.batchGetStats (since 2026-06-03).
	VideosBatchGetStats = "videos.batchGetStats"
	// VideosListRefresh is videos.list id= refreshing stored text older than
	// 30 days (store.policy amended), metered and counted apart from the chart.
	VideosListRefresh = "videos.list.refresh"
)

// Limits of the API (docs/design.md §3).
const (
	// ChartMax is the most videos chart=mostPopular returns: 200, 4 pages of 50.
	ChartMax = 200
	// MaxIDs is the most ids one videos.list, channels.list or
	// videos.batchGetStats call takes, and the largest maxResults.
	MaxIDs = 50
)

// Default bucket names (docs/design.md §4).
const (
	// BucketUnits is the project's shared daily units.
	BucketUnits = "units"
	// BucketSearch counts search.list calls so a pagination bug cannot drain the day.
	BucketSearch = "search"
	// BucketStats counts videos.batchGetStats units (Google's own bucket for it).
	BucketStats = "stats"
)

// Site is one call site.
type Site struct {
	// Name is the API method, e.g. VideosList; Path its REST path.
	Name, Path string
	// Units is Google's cost of one request in quota units.
	Units int64
	// Charges is the default limiter charge: bucket name to units per call.
	Charges map[string]int64
	// Policy is the default backend-failure policy.
	Policy Policy
	// GoogleBucket is the Google bucket Units are charged to: "" for the
	// project's shared units, else the method's own (docs/design.md §3).
	GoogleBucket string
	// Calls is how many calls runs runs (> 0) of one region send in a day of
	// length day, before retries.
	Calls func(u Use, runs int64, day time.Duration) Range
	// Why names the setting that makes runs send the call, for the error when
	// an enabled call site has no cost; "" when a run skips it without one.
	Why string
	// PerCredential: the calls are capped per credential whatever the
	// regions, so Calls counts every region's runs together.
	PerCredential bool
}

// Enabled reports whether a configuration asking u makes runs send this call.
func (s Site) Enabled(u Use) bool { return s.Calls(u, 1, 24*time.Hour).Most > 0 }

// Use is what a configuration asks of the API in one region's runs
// (config.Config.Use builds it). Zero durations and counts mean off.
type Use struct {
	// Charts is the charts a run fetches (the region's and its category
	// charts); PageSize is their maxResults.
	Charts, PageSize int64
	// Searches counts the configured searches; SearchPages sums their max_pages.
	Searches, SearchPages int64
	// StatsTrackFor and StatsEvery are stats.track_for and stats.every.
	StatsTrackFor, StatsEvery time.Duration
	// ChannelsRefresh and CategoriesRefresh are channels.refresh and categories.refresh.
	ChannelsRefresh, CategoriesRefresh time.Duration
	// TextRefreshPerDay caps videos.list.refresh calls (store.refresh_per_day).
	TextRefreshPerDay int64
}

// Range is a number of calls or units in a day: the least, the expected and the most.
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

// sites is the table, sorted by Name.
var sites = []Site{
	{Name: ChannelsList, Path: "/youtube/v3/channels", Units: 1, Policy: FailOpen,
		Charges: map[string]int64{BucketUnits: 1}, Calls: channelCalls, Why: "channels.enabled is true"},
	{Name: SearchList, Path: "/youtube/v3/search", Units: 100, Policy: FailClosed,
		Charges: map[string]int64{BucketUnits: 100, BucketSearch: 1}, Calls: searchCalls, Why: "searches are configured"},
	{Name: CategoriesList, Path: "/youtube/v3/videoCategories", Units: 1, Policy: FailOpen,
		Charges: map[string]int64{BucketUnits: 1}, Calls: categoryCalls, Why: "categories.enabled is true"},
	{Name: VideosBatchGetStats, Path: "/youtube/v3/videos:batchGetStats", Units: 1, Policy: FailOpen,
		Charges: map[string]int64{BucketStats: 1}, GoogleBucket: BucketStats, Calls: statsCalls},
	{Name: VideosList, Path: "/youtube/v3/videos", Units: 1, Policy: FailOpen,
		Charges: map[string]int64{BucketUnits: 1}, Calls: chartCalls, Why: "every run fetches the chart"},
	{Name: VideosListRefresh, Path: "/youtube/v3/videos", Units: 1, Policy: FailOpen,
		Charges: map[string]int64{BucketUnits: 1}, Calls: textRefreshCalls, PerCredential: true,
		Why: "store.policy is amended (set store.refresh_per_day: 0 to remove old text without refreshing it)"},
}

// Turnover is the share of a chart replaced per day: measured 21-75% (new videos a day: US 43,
// GB 25, CA 137, FR 150) in the recorded 2017 Kaggle dataset; most is the whole chart.
// The Calls functions follow the order and rules of fetch's Runner.Run.
const turnoverExpected, turnoverMost = 0.5, 1.0

func ceilF(f float64) int64 { return int64(math.Ceil(f - 1e-9)) }

// chartCalls: every chart sends at least one page, a full one (the usual)
// all; then the search hits not already fetched in the run (least: none new).
func chartCalls(u Use, runs int64, _ time.Duration) Range {
	pages := ceilF(float64(ChartMax) / float64(max(u.PageSize, 1)))
	return Range{1, pages, pages}.Times(u.Charts * runs).Add(Range{0, u.SearchPages, u.SearchPages}.Times(runs))
}

func searchCalls(u Use, runs int64, _ time.Duration) Range {
	return Range{u.Searches, u.SearchPages, u.SearchPages}.Times(runs)
}

// statsCalls: videos that left the chart within track_for, each sampled at most once per
// stats.every and per run; the last batch of a run may be short (most: one more a run).
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

func categoryCalls(u Use, runs int64, day time.Duration) Range {
	if u.CategoriesRefresh <= 0 {
		return Range{}
	}
	due := min(runs, ceilF(float64(day)/float64(u.CategoriesRefresh)))
	return Range{0, due, due}
}

// textRefreshCalls: at most store.refresh_per_day calls per credential in any
// 24 hours (runs counts every region's; the cap is checked once per run, runs
// of different regions assumed staggered). Least: no text older than 30
// days; expected: the cap; most: the cap in each 24 hours the day starts.
func textRefreshCalls(u Use, runs int64, day time.Duration) Range {
	most := u.TextRefreshPerDay * min(runs, ceilF(day.Hours()/24))
	return Range{0, min(most, ceilF(float64(u.TextRefreshPerDay)*day.Hours()/24)), most}
}

// All returns a copy of every call site, sorted by name.
func All() []Site {
	out := slices.Clone(sites)
	for i := range out {
		out[i].Charges = maps.Clone(out[i].Charges)
	}
	return out
}

// Lookup returns a copy of the call site named name and whether it exists.
func Lookup(name string) (Site, bool) {
	all := All()
	i := slices.IndexFunc(all, func(s Site) bool { return s.Name == name })
	if i < 0 {
		return Site{}, false
	}
	return all[i], true
}

// Names returns every call site's name, sorted.
func Names() []string {
	out := make([]string, len(sites))
	for i, s := range sites {
		out[i] = s.Name
	}
	return out
}

// Quota presets (config quota.preset).
const (
	// PresetClassic is the default: the buckets of docs/design.md §4 and each call site's Charges.
	PresetClassic = "classic"
	// PresetGoogle2026 models Google's granular quota of 2026 exactly
	// (docs/design.md §3): calendar buckets with Google's limits, each call
	// site charged its Units in its Google bucket, search.list 1 call in search.
	PresetGoogle2026 = "google-2026"
)

// Presets lists the preset names.
func Presets() []string { return []string{PresetClassic, PresetGoogle2026} }

// Preset returns the buckets and the charge of each call site (method to
// bucket to units) of preset name, and false for an unknown name.
func Preset(name string) ([]Bucket, map[string]map[string]int64, bool) {
	charges := map[string]map[string]int64{}
	switch name {
	case "", PresetClassic:
		for _, s := range All() {
			charges[s.Name] = s.Charges
		}
		return []Bucket{
			{Name: BucketUnits, Limit: 9500, Window: 24 * time.Hour},
			{Name: BucketSearch, Limit: 95, Window: 24 * time.Hour},
			{Name: BucketStats, Limit: 9500, Window: 24 * time.Hour},
		}, charges, true
	case PresetGoogle2026:
		for _, s := range sites {
			charges[s.Name] = map[string]int64{cmp.Or(s.GoogleBucket, BucketUnits): s.Units}
		}
		charges[SearchList] = map[string]int64{BucketSearch: 1}
		return []Bucket{
			{Name: BucketUnits, Limit: 10_000, Calendar: true},
			{Name: BucketSearch, Limit: 100, Calendar: true},
			{Name: BucketStats, Limit: 10_000, Calendar: true},
		}, charges, true
	}
	return nil, nil, false
}

// Run holds the defaults of a run's tunables, read by package config (api.*,
// runs.lease_ttl, stats.*) and package fetch (the zero values of its Settings;
// the fields mean what fetch.Settings' do).
type Run struct {
	PageSize                  int64
	Timeout, RetryBackoff     time.Duration
	Retries                   int
	LeaseTTL                  time.Duration
	StatsTrackFor, StatsEvery time.Duration
}

// RunDefaults returns the defaults of a run's tunables.
func RunDefaults() Run {
	return Run{PageSize: MaxIDs, Timeout: 30 * time.Second, Retries: 2, RetryBackoff: time.Second,
		LeaseTTL: 2 * time.Minute, StatsTrackFor: 168 * time.Hour, StatsEvery: 6 * time.Hour}
}
