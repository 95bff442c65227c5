package regions

import (
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, want, suggestion string }{
		{"US", "US", ""},
		{" us ", "US", ""},
		{"gb", "GB", ""},
		{"UK", "", "GB"},
		{"usa", "", "US"},
		{"SU", "", "US"},
		{"XX", "", ""},
		{"", "", ""},
	} {
		got, err := Parse(tc.in)
		if got != tc.want {
			t.Errorf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.want != "" {
			if err != nil {
				t.Errorf("Parse(%q): %v", tc.in, err)
			}
			continue
		}
		var re *Error
		if !errors.As(err, &re) {
			t.Fatalf("Parse(%q) error = %v, want *Error", tc.in, err)
		}
		if re.Suggestion != tc.suggestion {
			t.Errorf("Parse(%q) suggestion = %q, want %q (%v)", tc.in, re.Suggestion, tc.suggestion, err)
		}
	}
	_, err := Parse("UK")
	if got, want := err.Error(), `unsupported region "UK": did you mean GB?`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestParseListDedups(t *testing.T) {
	got, err := ParseList([]string{"us", "GB", "US", "jp"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"US", "GB", "JP"}; !equal(got, want) {
		t.Errorf("ParseList = %v, want %v", got, want)
	}
	if _, err := ParseList([]string{"US", "UK"}); err == nil {
		t.Error("ParseList with UK: want error")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCodesMatchRecordedList checks the embedded list against its source,
// the recorded i18nRegions.list response (docs/design.md §7).
func TestCodesMatchRecordedList(t *testing.T) {
	path := filepath.Join(youtubetest.DataDir(t), "api_json", "yamapi0103__i18nRegions_items_hl-zh-TW_2020.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var items []struct {
		Snippet struct{ Gl string } `json:"snippet"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, it := range items {
		want = append(want, it.Snippet.Gl)
	}
	sort.Strings(want)
	if !equal(All(), want) {
		t.Errorf("embedded codes differ from the recorded list:\n got %v\nwant %v", All(), want)
	}
	if !sort.StringsAreSorted(codes) {
		t.Error("codes must stay sorted (Supported uses binary search)")
	}
}
