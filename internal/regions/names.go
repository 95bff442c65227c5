package regions

import (
	"strings"
	"sync"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// codes are the supported region codes, sorted (source: the package comment).
var codes = strings.Fields(`
	AE AR AT AU AZ BA BE BG BH BO BR BY CA CH CL CO CR CY CZ DE DK DO DZ EC EE EG ES FI FR GB GE GH
	GR GT HK HN HR HU ID IE IL IN IQ IS IT JM JO JP KE KR KW KZ LB LI LK LT LU LV LY MA ME MK MT MX
	MY NG NI NL NO NP NZ OM PA PE PG PH PK PL PR PT PY QA RO RS RU SA SE SG SI SK SN SV TH TN TR TW
	TZ UA UG US UY VE VN YE ZA ZW`)

// names are the regions' English names from the Unicode CLDR (golang.org/x/text/language/display),
// built on first use; "MK" follows ISO 3166-1's current name, which x/text's CLDR predates.
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
