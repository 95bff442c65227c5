// Package regions knows the YouTube-supported region codes (ISO 3166-1
// alpha-2) and validates operator input against them. Source: the recorded
// i18nRegions.list response (docs/design.md §7; 106 regions, 2020); a region
// added later is refused until codes has it.
package regions

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// aliases maps codes operators commonly type for a region to its ISO code.
var aliases = map[string]string{
	"UK":  "GB", // ISO 3166-1 uses GB for the United Kingdom
	"EN":  "GB",
	"USA": "US",
	"EL":  "GR", // EU code for Greece
	"JA":  "JP", // language code, not a region
	"KO":  "KR",
	"ZH":  "TW",
	"CN":  "TW", // the YouTube Data API has no CN region
}

// All returns every supported region code, sorted (106 codes).
func All() []string { return append([]string(nil), codes...) }

// Supported reports whether code (already upper case) is a supported region.
func Supported(code string) bool {
	_, ok := slices.BinarySearch(codes, code)
	return ok
}

// Error is returned by Parse for an unsupported code; Suggestion is "" when
// no close code is known.
type Error struct {
	Input      string
	Suggestion string
}

func (e *Error) Error() string {
	if e.Suggestion != "" {
		return fmt.Sprintf("unsupported region %q: did you mean %s?", e.Input, e.Suggestion)
	}
	return fmt.Sprintf("unsupported region %q: want a two-letter YouTube region code such as US, GB or JP", e.Input)
}

// Parse normalizes one region code (case-insensitive, surrounding space
// ignored) and returns it upper case, or an *Error with a suggestion
// (Parse("uk") returns an error suggesting GB).
func Parse(s string) (string, error) {
	code := strings.ToUpper(strings.TrimSpace(s))
	if Supported(code) {
		return code, nil
	}
	return "", &Error{Input: s, Suggestion: suggest(code)}
}

// ParseList parses each code with Parse, dropping repeats; it returns the
// first error.
func ParseList(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, s := range in {
		code, err := Parse(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, code) {
			out = append(out, code)
		}
	}
	return out, nil
}

// suggest returns an alias target (UK -> GB), or the supported code whose
// two letters are code's transposed (SU -> US), or "".
func suggest(code string) string {
	if a, ok := aliases[code]; ok {
		return a
	}
	if len(code) == 2 && Supported(string([]byte{code[1], code[0]})) {
		return string([]byte{code[1], code[0]})
	}
	return ""
}

// codes are the supported region codes, sorted (source: the package comment).
var codes = strings.Fields(`
	AE AR AT AU AZ BA BE BG BH BO BR BY CA CH CL CO CR CY CZ DE DK DO DZ EC EE EG ES FI FR GB GE GH
	GR GT HK HN HR HU ID IE IL IN IQ IS IT JM JO JP KE KR KW KZ LB LI LK LT LU LV LY MA ME MK MT MX
	MY NG NI NL NO NP NZ OM PA PE PG PH PK PL PR PT PY QA RO RS RU SA SE SG SI SK SN SV TH TN TR TW
	TZ UA UG US UY VE VN YE ZA ZW`)

// names are the regions' English names from the Unicode CLDR
// (golang.org/x/text/language/display), built on first use; "MK" follows
// ISO 3166-1's current name, which x/text's CLDR predates.
var names = sync.OnceValue(func() map[string]string {
	m := map[string]string{"MK": "North Macedonia"}
	for _, c := range codes {
		if m[c] == "" {
			m[c] = display.English.Regions().Name(language.MustParseRegion(c))
		}
	}
	return m
})

// Name returns the English name of a supported region code (upper case),
// e.g. Name("GB") = "United Kingdom", or "" for an unsupported code.
func Name(code string) string { return names()[code] }
