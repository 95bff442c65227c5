package regions

import "time"

// Offset is one region's place in a staggered schedule.
type Offset struct {
	// Region is the region code.
	Region string
	// Index is the region's position in the configured list, from 0.
	Index int
	// Offset is Index × step: how long after the shared schedule's tick
	// this region starts.
	Offset time.Duration
}

// Stagger returns, for each region of list in list order, its offset
// i × step, so that regions never start together. The result depends only
// on the order of list and on step (the same config always gives the same
// offsets), and the offsets are distinct when step > 0 and list has no
// duplicates. A step <= 0 gives every region offset 0.
func Stagger(list []string, step time.Duration) []Offset {
	if step < 0 {
		step = 0
	}
	out := make([]Offset, len(list))
	for i, r := range list {
		out[i] = Offset{Region: r, Index: i, Offset: time.Duration(i) * step}
	}
	return out
}
