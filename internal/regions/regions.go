// Package regions knows the YouTube-supported region codes (ISO 3166-1 alpha-2) and validates
// operator input against them. Source: the recorded i18nRegions.list response (docs/design.md §7;
// 106 regions, 2020); a region added later is refused until codes has it.
package regions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trendfetch/trendfetch/internal/exitcode"
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

// Error is returned by Parse for an unsupported code; Suggestion is "" when no close code is known.
type Error struct {
	Input      string
	Suggestion string
}

// ExitCode is exitcode.Usage: not a region code.
func (e *Error) ExitCode() int { return exitcode.Usage }

func (e *Error) Error() string {
	if e.Suggestion != "" {
		return fmt.Sprintf("unsupported region %q: did you mean %s?", e.Input, e.Suggestion)
	}
	return fmt.Sprintf("unsupported region %q: want a two-letter YouTube region code such as US, GB or JP", e.Input)
}

// Parse normalizes one region code (case-insensitive, surrounding space ignored) and returns it
// upper case, or an *Error with a suggestion (Parse("uk") returns an error suggesting GB).
func Parse(s string) (string, error) {
	code := strings.ToUpper(strings.TrimSpace(s))
	if Supported(code) {
		return code, nil
	}
	return "", &Error{Input: s, Suggestion: suggest(code)}
}

// ParseList parses each code with Parse, dropping repeats; it returns the first error.
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
