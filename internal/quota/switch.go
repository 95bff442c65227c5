package quota

import (
	"cmp"
	"slices"
	"time"
)

// # Switching a bucket's form
//
// A bucket's usage is stored in the form its configuration gives it: a log
// (AlgorithmLog; its window and calendar mode do not change the form), or
// a ring of counters of one geometry (AlgorithmCounter: Slots counters of
// Window/(Slots-1) µs). When an operator changes a bucket's algorithm, its
// slots or a counter's window, the old form still holds the bucket's usage;
// ignored, it would start the bucket empty and re-admit a full window. So
// the persistent backends (Redis, SQLite) carry it over: the first Reserve
// that finds the bucket's old form converts it into the new one, in the
// same script or transaction as its decision, and deletes the old form;
// Status shows the converted usage without writing it. The conversion never
// makes usage leave the window earlier than it would have (over-counting is
// the safe side):
//
//   - log -> counter: each entry's units go to the counter that contains
//     its timestamp, as if the counter had been kept all along (exact).
//   - counter -> log, or -> counters of another geometry: each old
//     counter's units are stamped at its last µs (the latest moment any of
//     them can have been admitted; at most now), so they count until that
//     moment + window, up to one old sub-window longer than the calls did.
//
// A log appended to keeps its order: converted entries are stamped no
// earlier than its newest entry. Refunds of reservations made in the old
// form are skipped once it is converted (their units stay counted). The
// memory backend lives in one process whose configuration does not change
// while it runs: it starts a changed counter bucket empty.

// usageChunk is usage of a bucket's old form carried over: units stamped at
// µs at (Unix µs).
type usageChunk struct{ at, units int64 }

// oldCounter is one counter of a bucket's old form: index slot of span µs
// (it covers [slot*span, (slot+1)*span) µs), holding units.
type oldCounter struct{ slot, span, units int64 }

// counterChunks returns the chunks of old counters at nowUS (Unix µs): each
// counter with units, stamped at min(its last µs, nowUS), ascending by at
// (several may share one: the current counter and any from the future all
// end at nowUS).
func counterChunks(counters []oldCounter, nowUS int64) []usageChunk {
	var out []usageChunk
	for _, c := range counters {
		if c.units > 0 {
			out = append(out, usageChunk{at: min((c.slot+1)*c.span-1, nowUS), units: c.units})
		}
	}
	slices.SortStableFunc(out, func(a, b usageChunk) int { return cmp.Compare(a.at, b.at) })
	return out
}

// fold adds chunks to w's counters: each one's units to the counter that
// contains its at; a chunk before w's oldest counter has left the window.
func (w *counterWindow) fold(chunks []usageChunk) {
	c, _ := w.cs.slot(w.now)
	n := int64(w.cs.n)
	for _, ch := range chunks {
		j, _ := w.cs.slot(ch.at)
		if i := min(j-(c-n+1), n-1); i >= 0 { // a chunk after counter c (clock behind) counts in it
			w.u[i] += ch.units
		}
	}
}

// appendedLog is the window of a log followed by chunks appended after its
// newest entry (what converting a log bucket's old counters into its log
// leaves, seen without writing it; Status).
type appendedLog struct {
	b      Bucket
	nowUS  int64
	cutoff int64 // an entry counts in the window iff its stamp > cutoff
	// log: the log's own window (used, entries, oldest: 0 if none)
	logUsed, logEntries, logOldest int64
	chunks                         []usageChunk // stamped at >= the log's newest entry, ascending
}

// restamp returns chunks stamped no earlier than newest (Unix µs; 0 for an
// empty log), so that appended to a log they keep its stamps in order.
func restamp(chunks []usageChunk, newest int64) []usageChunk {
	out := slices.Clone(chunks)
	for i := range out {
		out[i].at = max(out[i].at, newest)
	}
	return out
}

// figures returns the window's used units, entries and oldest stamp (Unix
// µs, 0 if none).
func (a appendedLog) figures() (used, entries, oldest int64) {
	used, entries, oldest = a.logUsed, a.logEntries, a.logOldest
	for _, ch := range a.chunks {
		if ch.at > a.cutoff {
			used += ch.units
			entries++
			if oldest == 0 {
				oldest = ch.at
			}
		}
	}
	return used, entries, oldest
}

// chunkRetry returns how long after nowUS a call of units fits, when the
// log's own window cannot free enough (need > logUsed) and the chunks must
// leave too: the chunk that frees the last needed unit leaves at its stamp +
// window (calendar: the next Pacific midnight). ok is false when need <=
// logUsed (the log's own retry applies) or the call fits now.
func (a appendedLog) chunkRetry(units int64) (d time.Duration, ok bool) {
	used, _, _ := a.figures()
	need := used + units - a.b.Limit
	if need <= 0 || units > a.b.Limit || need <= a.logUsed {
		return 0, false
	}
	if a.b.Calendar {
		return time.Duration(NextPacificMidnight(time.UnixMicro(a.nowUS)).UnixMicro()-a.nowUS) * time.Microsecond, true
	}
	freed := a.logUsed
	for _, ch := range a.chunks {
		if ch.at <= a.cutoff {
			continue
		}
		if freed += ch.units; freed >= need {
			return time.Duration(ch.at+sqliteWindowUS(a.b.Window)-a.nowUS) * time.Microsecond, true
		}
	}
	return 0, false // unreachable: need <= used
}

// since returns the chunks' units stamped at or after fromUS (UsedToday).
func (a appendedLog) since(fromUS int64) (units int64) {
	for _, ch := range a.chunks {
		if ch.at >= fromUS {
			units += ch.units
		}
	}
	return units
}
