package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"text/tabwriter"

	"github.com/trendfetch/trendfetch/internal/termtext"
)

// ioStreams is where a command writes: stdout and stderr (scrubbed of secrets in the process) and
// whether each is a terminal. Tests give buffers.
type ioStreams struct {
	stdout, stderr       io.Writer
	stdoutTTY, stderrTTY bool // terminals: console logs; search's bold, video's sparkline
}

// printJSON writes v to stdout as every --json does: indented, & < > as
// they are, a nil slice as [].
func (s ioStreams) printJSON(v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		v = []any{}
	}
	enc := json.NewEncoder(s.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table starts an aligned table on w (columns two spaces apart) with its header line.
func table(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// csvInt writes a statistic for CSV: empty when unknown.
func csvInt(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// humanInt writes a statistic for people: "-" when unknown, else grouped by thousands (1,234,567).
func humanInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return termtext.Thousands(*p)
}

// utcMinute and utcSecond are the times of tables for people (UTC, no zone).
const (
	utcMinute = "2006-01-02 15:04"
	utcSecond = "2006-01-02 15:04:05"
)
