package callsite_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// TestTableIsConsistent checks what every consumer of the table relies on:
// unique names and paths, sorted order, a known default bucket for every
// charge, a valid policy and a Google cost of at least 1 unit.
func TestTableIsConsistent(t *testing.T) {
	buckets := map[string]bool{}
	for _, b := range classicBuckets() {
		if b.Limit <= 0 || b.Window <= 0 {
			t.Errorf("bucket %s: limit %d window %s, want both > 0", b.Name, b.Limit, b.Window)
		}
		buckets[b.Name] = true
	}
	names, paths := map[string]bool{}, map[string]string{}
	all := callsite.All()
	if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Name < all[j].Name }) {
		t.Error("table not sorted by name")
	}
	for _, s := range all {
		// A path is one API method's; a second call site of the same
		// method (videos.list.refresh) extends its name.
		if first, ok := paths[s.Path]; names[s.Name] || ok && !strings.HasPrefix(s.Name, first+".") {
			t.Errorf("%s: name or path %s declared twice", s.Name, s.Path)
		}
		names[s.Name] = true
		if _, ok := paths[s.Path]; !ok {
			paths[s.Path] = s.Name
		}
		if s.Units < 1 {
			t.Errorf("%s: Google cost %d, want >= 1 (every request costs at least 1 unit)", s.Name, s.Units)
		}
		if s.Policy != callsite.FailOpen && s.Policy != callsite.FailClosed {
			t.Errorf("%s: policy %q", s.Name, s.Policy)
		}
		if len(s.Charges) == 0 {
			t.Errorf("%s: charges no bucket", s.Name)
		}
		for b := range s.Charges {
			if !buckets[b] {
				t.Errorf("%s: charges unknown bucket %q", s.Name, b)
			}
		}
		if got, ok := callsite.Lookup(s.Name); !ok || got.Path != s.Path {
			t.Errorf("Lookup(%s) = %+v, %v", s.Name, got, ok)
		}
	}
	if _, ok := callsite.Lookup("video.list"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
	if len(callsite.Names()) != len(all) {
		t.Errorf("Names() has %d entries, All() %d", len(callsite.Names()), len(all))
	}
}

// TestCopiesAreIndependent: a caller changing a returned Site's charges
// must not change the table (config defaults are built from it).
func TestCopiesAreIndependent(t *testing.T) {
	s, _ := callsite.Lookup(callsite.SearchList)
	s.Charges[callsite.BucketUnits] = 1
	if again, _ := callsite.Lookup(callsite.SearchList); again.Charges[callsite.BucketUnits] != 100 {
		t.Errorf("table changed through a copy: %v", again.Charges)
	}
}

// TestEachSettingEnablesItsCallSite: the rows say which call sites a
// configuration makes runs send (Site.Enabled, from Calls): the chart
// alone sends videos.list; each setting adds its own call site and no other.
func TestEachSettingEnablesItsCallSite(t *testing.T) {
	chart := callsite.Use{Charts: 1, PageSize: 50}
	for _, tc := range []struct {
		edit func(*callsite.Use)
		want []string
	}{
		{func(*callsite.Use) {}, nil},
		{func(u *callsite.Use) { u.Searches, u.SearchPages = 1, 2 }, []string{callsite.SearchList}},
		{func(u *callsite.Use) { u.StatsTrackFor, u.StatsEvery = time.Hour, time.Hour }, []string{callsite.VideosBatchGetStats}},
		{func(u *callsite.Use) { u.ChannelsRefresh = time.Hour }, []string{callsite.ChannelsList}},
		{func(u *callsite.Use) { u.CategoriesRefresh = time.Hour }, []string{callsite.CategoriesList}},
		{func(u *callsite.Use) { u.TextRefreshPerDay = 10 }, []string{callsite.VideosListRefresh}},
	} {
		u := chart
		tc.edit(&u)
		want := append([]string{callsite.VideosList}, tc.want...)
		var got []string
		for _, s := range callsite.All() {
			if s.Enabled(u) {
				got = append(got, s.Name)
			}
		}
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%+v enables %v, want %v", u, got, want)
		}
	}
}

// classicBuckets returns the default buckets (the classic preset's).
func classicBuckets() []callsite.Bucket {
	buckets, _, _ := callsite.Preset(callsite.PresetClassic)
	return buckets
}
