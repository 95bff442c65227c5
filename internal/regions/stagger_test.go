package regions

import (
	"testing"
	"time"
)

func TestStaggerDeterministicAndDistinct(t *testing.T) {
	list := []string{"US", "GB", "JP", "DE", "FR"}
	a := Stagger(list, 3*time.Minute)
	b := Stagger(append([]string(nil), list...), 3*time.Minute)
	if len(a) != len(list) {
		t.Fatalf("%d offsets for %d regions", len(a), len(list))
	}
	seen := map[time.Duration]string{}
	for i, o := range a {
		if o != b[i] {
			t.Errorf("offset %d differs between two calls: %+v vs %+v", i, o, b[i])
		}
		if o.Region != list[i] || o.Index != i || o.Offset != time.Duration(i)*3*time.Minute {
			t.Errorf("offset %d = %+v, want %s at %s", i, o, list[i], time.Duration(i)*3*time.Minute)
		}
		if prev, dup := seen[o.Offset]; dup {
			t.Errorf("%s and %s share offset %s", prev, o.Region, o.Offset)
		}
		seen[o.Offset] = o.Region
	}
	// Order matters, nothing else: GB first gets offset 0.
	if c := Stagger([]string{"GB", "US"}, time.Minute); c[0].Region != "GB" || c[0].Offset != 0 || c[1].Offset != time.Minute {
		t.Errorf("Stagger(GB, US) = %+v", c)
	}
	for _, o := range Stagger(list, 0) {
		if o.Offset != 0 {
			t.Errorf("step 0: %+v", o)
		}
	}
}

func TestEveryRegionHasAName(t *testing.T) {
	for _, c := range All() {
		if Name(c) == "" {
			t.Errorf("region %s has no English name", c)
		}
	}
	if len(names) != len(codes) {
		t.Errorf("%d names for %d codes: a name for an unsupported code", len(names), len(codes))
	}
	for code, want := range map[string]string{"GB": "United Kingdom", "US": "United States", "JP": "Japan", "MK": "North Macedonia"} {
		if got := Name(code); got != want {
			t.Errorf("Name(%s) = %q, want %q", code, got, want)
		}
	}
	if Name("XX") != "" || Name("gb") != "" {
		t.Error("Name of an unsupported or lower-case code is not empty")
	}
}
