// Package duration reads durations as trendfetch takes them everywhere (the
// config file, flags): Go's syntax with leading days ("90d", "1d12h").
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

// Duration is a time.Duration read by Parse from YAML and flags (pflag.Value).
type Duration time.Duration

// Parse parses time.ParseDuration's syntax ("500ms", "2h") with leading whole 24h days allowed
// ("90d", "1d12h"). Errors say what is wanted.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 32)
		if err != nil || n < 0 {
			return 0, errBadDuration
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
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

var errBadDuration = errors.New("want a duration such as 90s, 30m, 2h or 90d")

// ErrAmbiguousMinutes is ParseAge's error for "m" (minutes or months?).
var ErrAmbiguousMinutes = errors.New(`"m" is minutes, not months: write 30d for a month (or 60s, 1h for minutes)`)

// ParseAge parses a positive age (prune --older-than), refusing minutes (ErrAmbiguousMinutes).
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

// UnmarshalYAML parses the duration with Parse; errors quote the value.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || d.Set(n.Value) != nil {
		return fmt.Errorf("a duration such as 90s, 30m or 24h (got %q)", termtext.Clip(n.Value, 40))
	}
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String is the Go duration string (pflag.Value).
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses s with Parse (pflag.Value).
func (d *Duration) Set(s string) error {
	v, err := Parse(s)
	if err == nil {
		*d = Duration(v)
	}
	return err
}

// Type names the flag's value in help (pflag.Value).
func (d *Duration) Type() string { return "duration" }
