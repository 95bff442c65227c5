// Package duration reads durations as trendfetch takes them everywhere (the
// config file, flags): Go's syntax with a leading whole number of days
// ("90d", "1d12h"; a day is 24h).
package duration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Duration is a time.Duration read from YAML and from flags as a Go
// duration ("90s", "2h30m") or with days ("90d", "1d12h"; a day is 24h):
// see Parse. It implements pflag.Value, so a flag of this type reads
// durations exactly as the config file does.
type Duration time.Duration

// day is the "d" unit of Parse.
const day = 24 * time.Hour

// Parse parses a duration everywhere trendfetch reads one: Go's
// syntax (time.ParseDuration: "500ms", "90s", "30m", "2h") with a leading
// whole number of days allowed ("90d", "1d12h"). Errors say what is wanted.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 32)
		if err != nil || n < 0 {
			return 0, errBadDuration
		}
		days, s = time.Duration(n)*day, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil || (days > 0 && v < 0) {
		return 0, errBadDuration
	}
	return days + v, nil
}

// errBadDuration is Parse's error: what is wanted, not Go's parser
// message.
var errBadDuration = errors.New("want a duration such as 90s, 30m, 2h or 90d")

// ErrAmbiguousMinutes is ParseAge's error for a value in minutes ("1m",
// "6m"): minute or month? trendfetch has no month unit.
var ErrAmbiguousMinutes = errors.New(`"m" is minutes, not months: write 30d for a month (or 60s, 1h for minutes)`)

// ParseAge parses an age counted in days or months by people (a retention,
// prune --older-than): Parse, positive, with "m" (minutes) refused
// as ambiguous (ErrAmbiguousMinutes).
func ParseAge(s string) (time.Duration, error) {
	if strings.Contains(strings.ReplaceAll(s, "ms", ""), "m") {
		return 0, ErrAmbiguousMinutes
	}
	v, err := Parse(s)
	if err != nil || v <= 0 {
		return 0, errors.New("want a positive duration such as 90d or 2160h")
	}
	return v, nil
}

// UnmarshalYAML parses the duration with Parse; its error says what is
// wanted and what was given.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := Parse(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("a duration such as 90s, 30m or 24h (got %q)", termtext.Clip(n.Value, 40))
	}
	*d = Duration(v)
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String is the Go duration string (pflag.Value).
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses s with Parse (pflag.Value).
func (d *Duration) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Type names the flag's value in help (pflag.Value).
func (d *Duration) Type() string { return "duration" }
