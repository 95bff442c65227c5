package config

import (
	"errors"
	"strings"
	"testing"
)

// TestBucketAlgorithm: a quota bucket is a sliding-window log (algorithm
// log or unset); counter is refused with one line pointing to
// serve.rate_limit, anything else with one line naming the setting.
func TestBucketAlgorithm(t *testing.T) {
	c, err := parse(strings.NewReader(`
quota:
  buckets:
    - {name: units, limit: 9500, window: 24h}
    - {name: search, limit: 95, window: 24h, algorithm: log}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Limits(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, algorithm, says string
	}{
		{"counter", "counter", "serve.rate_limit"},
		{"unknown algorithm", "gcra", "want log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Quota.Buckets[1].Algorithm = tc.algorithm
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != "quota.buckets[1].algorithm" || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want a *ValidationError on quota.buckets[1].algorithm saying %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}
