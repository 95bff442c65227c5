package quota

import (
	"maps"
	"time"
)

// bucketView is the machine shape of a BucketStatus: snake_case keys,
// windows in seconds, waits in milliseconds rounded up (never early).
type bucketView struct {
	Name            string     `json:"name"`
	Limit           int64      `json:"limit"`
	WindowSeconds   float64    `json:"window_seconds"`
	Calendar        bool       `json:"calendar"`
	Used            int64      `json:"used"`
	Remaining       int64      `json:"remaining"`
	Entries         int64      `json:"entries"`
	Oldest          *time.Time `json:"oldest"` // null when the window is empty
	RetryAfterOneMs int64      `json:"retry_after_one_ms"`
	MaxCost         int64      `json:"max_cost"`
	RetryAfterMaxMs int64      `json:"retry_after_max_ms"`
	UsedToday       int64      `json:"used_today"`
	Shadow          bool       `json:"shadow"`
	// ShadowDenials counts, per call site, the admitted calls a shadow
	// bucket would have denied since the last Pacific midnight ({}: none).
	ShadowDenials map[string]int64 `json:"shadow_denials"`
	// Held is, per outage reserve (its id: host name and suffix), the units it holds ({}: none).
	Held map[string]int64 `json:"held"`
}

// StatusView is the machine shape of a Status, shared by `quota status
// --json` and the read API's GET /v1/quota: snake_case keys, null for
// unknown values, RFC 3339 UTC times.
type StatusView struct {
	Credential string `json:"credential"`
	Backend    string `json:"backend"`
	// Preset is the configured quota preset (classic, google-2026), "" when
	// the caller does not know it.
	Preset         string       `json:"preset,omitempty"`
	Reachable      bool         `json:"reachable"`
	Error          *string      `json:"error"` // null when reachable
	LatencyMs      float64      `json:"latency_ms"`
	Now            *time.Time   `json:"now"`               // null when the backend did not answer
	DayStart       *time.Time   `json:"pacific_day_start"` // the current Pacific quota day's start
	ExhaustedUntil *time.Time   `json:"exhausted_until"`   // null unless the credential is marked exhausted
	Marks          []markView   `json:"marks"`             // the credential's and the call sites' marks
	Buckets        []bucketView `json:"buckets"`
}

// markView is the machine shape of a Mark.
type markView struct {
	CallSite *string   `json:"call_site"` // null: the credential's mark
	Until    time.Time `json:"until"`
	Why      string    `json:"why"`
}

// View returns the machine shape of st.
func (st Status) View() StatusView {
	out := StatusView{Credential: st.Credential, Backend: st.Backend, Reachable: st.Reachable,
		LatencyMs: float64(st.Latency.Microseconds()) / 1000, Now: utcOrNil(st.Now), ExhaustedUntil: utcOrNil(st.ExhaustedUntil()),
		Marks: []markView{}, Buckets: []bucketView{}}
	for _, m := range st.Marks {
		mv := markView{Until: m.Until.UTC(), Why: m.Why}
		if m.Site != "" {
			mv.CallSite = &m.Site
		}
		out.Marks = append(out.Marks, mv)
	}
	if st.Err != nil {
		msg := st.Err.Error()
		out.Error = &msg
	}
	if !st.Now.IsZero() {
		out.DayStart = utcOrNil(DayStart(st.Now))
	}
	for _, b := range st.Buckets {
		out.Buckets = append(out.Buckets, bucketView{Name: b.Name, Limit: b.Limit, WindowSeconds: b.Window.Seconds(),
			Calendar: b.Calendar, Used: b.Used, Remaining: b.Remaining, Entries: b.Entries, Oldest: utcOrNil(b.Oldest),
			RetryAfterOneMs: ceilTo(b.RetryAfterOne, time.Millisecond), MaxCost: b.MaxCost, RetryAfterMaxMs: ceilTo(b.RetryAfterMax, time.Millisecond),
			UsedToday: b.UsedToday, Shadow: b.Shadow, ShadowDenials: map[string]int64{}, Held: map[string]int64{}})
		maps.Copy(out.Buckets[len(out.Buckets)-1].ShadowDenials, b.ShadowDenials)
		maps.Copy(out.Buckets[len(out.Buckets)-1].Held, b.Held)
	}
	return out
}

// utcOrNil is t in UTC, or nil (JSON null) for the zero time.
func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
