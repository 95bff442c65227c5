// Package plan estimates the calls and units a configuration spends in one Pacific day, per
// call site and bucket (docs/operations.md, "Planning the day's quota"). Start with Compute.
package plan

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// Options change what Compute assumes.
type Options struct {
	// RunsPerDay, when > 0, replaces every region's schedule.
	RunsPerDay int
	// Day is any time in the Pacific day to plan (default: tomorrow's).
	Day time.Time
}

// Range is a quantity per day: the least, the expected and the most.
type Range = callsite.Range

// Verdicts of a bucket: even the most fits its limit; the expected fits,
// the most does not (a warning); the expected does not (a configuration to fix).
const (
	Fits        = "fits"
	MostExceeds = "most exceeds"
	DoesNotFit  = "does not fit"
)

// Bucket is one bucket's day.
type Bucket struct {
	Name string `json:"name"`
	// Scope is "config" (a configured bucket) or callsite.PresetGoogle2026.
	Scope string `json:"scope"`
	// Limit is what the bucket admits in the day (a sliding window's limit
	// scaled to the day's length).
	Limit int64 `json:"limit"`
	// Units are the units charged to the bucket in the day.
	Units Range `json:"units"`
	// Verdict is Fits, MostExceeds or DoesNotFit.
	Verdict string `json:"verdict"`
	// Dominant is the schedule group spending most of the expected units.
	Dominant Group `json:"dominant"`
	// Shadow marks a shadow bucket (quota.buckets[].shadow): it never
	// denies, so its verdict is what it would do; Fits and MostFits skip it.
	Shadow bool `json:"shadow"`
	// Reserve is this host's outage reserve (quota.reserve), held in every
	// window and so taken from the limit before it is scaled to the day.
	Reserve int64 `json:"reserve"`
}

// Group is the regions sharing a schedule and what they charge a bucket.
type Group struct {
	// Regions are the group's region codes, in config order.
	Regions []string `json:"regions"`
	// Schedule is e.g. "every 2h", a cron spec or "12 runs a day".
	Schedule string `json:"schedule"`
	// Units are the expected units the group charges the bucket.
	Units int64 `json:"units"`
}

// Site is one call site's calls in the day, all regions together.
type Site struct {
	Method string `json:"method"`
	Calls  Range  `json:"calls"`
}

// Region is one region's runs in the day.
type Region struct {
	Region   string `json:"region"`
	Schedule string `json:"schedule"`
	Runs     int64  `json:"runs"`
}

// Plan is the estimate of one Pacific day.
type Plan struct {
	// Day is the Pacific date planned (YYYY-MM-DD); Hours its length (23-25).
	Day     string    `json:"day"`
	Hours   float64   `json:"hours"`
	Regions []Region  `json:"regions"`
	Sites   []Site    `json:"call_sites"`
	Buckets []Bucket  `json:"buckets"`
	Start   time.Time `json:"start"`
}

// Fits reports whether the expected use fits every bucket (shadow buckets aside).
func (p *Plan) Fits() bool {
	return !slices.ContainsFunc(p.Buckets, func(b Bucket) bool { return !b.Shadow && b.Verdict == DoesNotFit })
}

// MostFits reports whether even the most fits every bucket (shadow buckets aside).
func (p *Plan) MostFits() bool {
	return !slices.ContainsFunc(p.Buckets, func(b Bucket) bool { return !b.Shadow && b.Verdict != Fits })
}

// Compute plans cfg (completed and validated) for one Pacific day (23-25 hours).
func Compute(cfg *config.Config, opts Options) (*Plan, error) {
	day := cmp.Or(opts.Day, time.Now().AddDate(0, 0, 1))
	start, end := quota.DayStart(day), quota.NextPacificMidnight(day)
	length := end.Sub(start)
	sched, err := cfg.Schedule.Plan(cfg.Regions)
	if err != nil {
		return nil, err
	}
	p := &Plan{Day: start.Format(time.DateOnly), Hours: length.Hours(), Start: start.UTC()}
	perRegion := map[string]map[string]Range{} // region ("": shared) -> method -> calls
	group := map[string]string{}               // region -> schedule group
	var allRuns int64
	for _, rp := range sched {
		runs, desc := int64(opts.RunsPerDay), fmt.Sprintf("%d runs a day", opts.RunsPerDay)
		if runs <= 0 {
			runs, desc = 0, rp.Spec
			if !rp.Explicit {
				desc, _, _ = strings.Cut(rp.Spec, " +") // the group, not the offset
				desc = strings.ReplaceAll(strings.ReplaceAll(desc, "m0s", "m"), "h0m", "h")
			}
			for t := rp.Schedule.Next(start.Add(-time.Nanosecond)); t.Before(end); t = rp.Schedule.Next(t) {
				runs++
			}
		}
		p.Regions = append(p.Regions, Region{Region: rp.Region, Schedule: desc, Runs: runs})
		group[rp.Region] = desc
		perRegion[rp.Region] = calls(cfg, rp.Region, runs, length)
		allRuns += runs
	}
	perRegion[""] = calls(cfg, "", allRuns, length) // the call sites capped per credential
	total := map[string]Range{}
	for _, calls := range perRegion {
		for m, r := range calls {
			total[m] = total[m].Add(r)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(total)) {
		p.Sites = append(p.Sites, Site{Method: m, Calls: total[m]})
	}
	d := demand{perRegion: perRegion, group: group, order: cfg.Regions}
	reserve, err := cfg.ReserveUnits()
	if err != nil {
		return nil, err
	}
	for _, b := range cfg.Quota.Buckets {
		limit := b.Limit - reserve[b.Name]
		if !b.Calendar && b.Window.Std() != length {
			limit = int64(math.Floor(float64(limit) * float64(length) / float64(b.Window.Std())))
		}
		p.Buckets = append(p.Buckets, d.bucket(b.Name, "config", limit, cfg.Quota.Costs))
		p.Buckets[len(p.Buckets)-1].Shadow, p.Buckets[len(p.Buckets)-1].Reserve = b.Shadow, reserve[b.Name]
	}
	gBuckets, gCharges, _ := callsite.Preset(callsite.PresetGoogle2026)
	for _, b := range gBuckets {
		p.Buckets = append(p.Buckets, d.bucket(b.Name, callsite.PresetGoogle2026, b.Limit, gCharges))
	}
	return p, nil
}

// demand is a day's calls: per region (region "": the call sites capped per
// credential) and method, each region's schedule group, the regions in order.
type demand struct {
	perRegion map[string]map[string]Range
	group     map[string]string
	order     []string
}

// bucket sums the units costs charge bucket name for the day's calls, and
// finds the schedule group spending most of the regions' (not region "").
func (d demand) bucket(name, scope string, limit int64, costs map[string]map[string]int64) Bucket {
	b := Bucket{Name: name, Scope: scope, Limit: limit}
	byGroup := map[string]int64{}
	for region, calls := range d.perRegion {
		for m, r := range calls {
			u := r.Times(costs[m][name])
			b.Units = b.Units.Add(u)
			if region != "" {
				byGroup[d.group[region]] += u.Expected
			}
		}
	}
	switch {
	case b.Units.Expected > limit:
		b.Verdict = DoesNotFit
	case b.Units.Most > limit:
		b.Verdict = MostExceeds
	default:
		b.Verdict = Fits
	}
	var top string
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		if top == "" || byGroup[g] > byGroup[top] {
			top = g
		}
	}
	b.Dominant = Group{Schedule: top, Units: byGroup[top]}
	for _, r := range d.order {
		if d.group[r] == top {
			b.Dominant.Regions = append(b.Dominant.Regions, r)
		}
	}
	return b
}

// calls is what runs runs send in a day of length, per call site with a cost,
// the most retried api.retries times: of region, or for region "" of the call
// sites capped per credential (runs being every region's).
func calls(cfg *config.Config, region string, runs int64, length time.Duration) map[string]Range {
	out := map[string]Range{}
	for _, s := range callsite.All() {
		if _, ok := cfg.Quota.Costs[s.Name]; ok && runs > 0 && s.PerCredential == (region == "") {
			if r := s.Calls(cfg.Use(region), runs, length); r != (Range{}) {
				r.Most *= int64(1 + cfg.API.Retries)
				out[s.Name] = r
			}
		}
	}
	return out
}
