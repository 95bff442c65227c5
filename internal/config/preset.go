package config

import (
	"strings"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// applyPreset replaces the default buckets (when the file gave none) and
// costs (likewise) with those of q.Preset, with q.Headroom percent kept back
// from each google-2026 limit. Errors name quota.preset or quota.headroom.
func (q *Quota) applyPreset(buckets, costs bool) error {
	if q.Headroom < 0 || q.Headroom > 90 {
		return invalid("quota.headroom", q.Headroom, "want a percent 0-90")
	}
	if q.Headroom != 0 && q.Preset != callsite.PresetGoogle2026 {
		return invalid("quota.headroom", q.Headroom, "applies to preset google-2026 (classic already keeps 5%% back)")
	}
	pb, pc, ok := callsite.Preset(q.Preset)
	if !ok {
		return invalid("quota.preset", Truncate(q.Preset, 40), "want %s", strings.Join(callsite.Presets(), " or "))
	}
	if q.Preset == "" || q.Preset == callsite.PresetClassic {
		return nil // the defaults are classic
	}
	if buckets {
		q.Buckets = q.Buckets[:0]
		for _, b := range pb {
			limit := max(b.Limit*int64(100-q.Headroom)/100, 1)
			q.Buckets = append(q.Buckets, BucketConfig{Name: b.Name, Limit: limit, Window: Duration(b.Window), Calendar: b.Calendar})
		}
	}
	if costs {
		q.Costs = pc
	}
	return nil
}

// PresetName is the preset the quota configuration started from, "classic"
// when none was given.
func (q Quota) PresetName() string {
	if q.Preset == "" {
		return callsite.PresetClassic
	}
	return q.Preset
}
