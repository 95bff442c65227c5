package regions

import (
	"slices"
	"testing"
)

func TestEveryRegionHasAName(t *testing.T) {
	for _, c := range All() {
		if Name(c) == "" {
			t.Errorf("region %s has no English name", c)
		}
	}
	if len(names()) != len(codes) || !slices.IsSorted(codes) {
		t.Errorf("%d names for %d codes (a name for an unsupported code), or the codes are not sorted", len(names()), len(codes))
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
