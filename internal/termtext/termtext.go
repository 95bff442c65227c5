// Package termtext makes text from outside (titles, upstream messages) safe to
// print on a terminal for people (docs/operations.md "Secrets"): Safe for a value
// printed whole, Clip for a bounded column. Machine output never passes here.
package termtext

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
	"github.com/dustin/go-humanize"
)

// Ellipsis marks text cut by Clip.
const Ellipsis = "…"

// visible returns the visible form of the first rune of s and its length in
// s: C0 controls, DEL and invalid bytes as \xHH (\t, \n, \r by name), C1
// controls, bidirectional controls and line separators as \uHHHH.
func visible(s string) (string, int) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return strconv.QuoteRune(r)[1:3], n // `\t`, `\n`, `\r`
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r), n
	case r >= 0x80 && r <= 0x9f,
		r == 0x061c,
		r == 0x200e || r == 0x200f,
		r >= 0x2028 && r <= 0x202e,
		r >= 0x2066 && r <= 0x2069:
		return fmt.Sprintf(`\u%04x`, r), n
	case r == utf8.RuneError && n == 1:
		return fmt.Sprintf(`\x%02x`, s[0]), n
	}
	return s[:n], n
}

// Safe returns s with every control character, bidirectional control and line separator replaced by
// its visible escape (ESC is `\x1b`, U+202E is `\u202e`) and each byte of invalid UTF-8 by `\xHH`.
// Printable text, including every script and emoji, is kept. Safe never shortens s.
func Safe(s string) string { return Clip(s, math.MaxInt) }

// Clip is Safe(s) cut to at most width runes (width >= 1), the cut marked
// with Ellipsis, which counts in width. An escape counts as its visible
// length and is never cut in half: it is kept whole or dropped whole.
func Clip(s string, width int) string {
	if width < 1 {
		return ""
	}
	var b strings.Builder
	used := 0
	for i := 0; i < len(s); {
		piece, n := visible(s[i:])
		w := utf8.RuneCountInString(piece)
		// The piece fits if it leaves room for the ellipsis, or if it ends s exactly at width.
		if used+w > width-1 && !(i+n == len(s) && used+w <= width) {
			b.WriteString(Ellipsis)
			return b.String()
		}
		b.WriteString(piece)
		used += w
		i += n
	}
	return b.String()
}

// Thousands writes n for people, grouped by thousands with commas:
// 1234567 is "1,234,567", -9500 is "-9,500".
func Thousands(n int64) string { return humanize.Comma(n) }

// Closest returns the candidate nearest to s by edit distance (Levenshtein
// in runes, case-insensitive), or "" when none is within a third of s's
// length (at least 1, at most 3 edits): close enough to be a typo.
func Closest(s string, candidates []string) string {
	best, bestD := "", 1+min(3, max(1, len(s)/3))
	for _, c := range candidates {
		if d := levenshtein.ComputeDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Mark returns Safe(s) with each whitespace run made one space and each [start, end) of marks (code
// point offsets into s, in order, not overlapping, as store.Hit.Highlights) wrapped in open and
// close. Offsets outside s are ignored.
func Mark(s string, marks [][2]int, open, close string) string {
	var b, piece strings.Builder
	flush := func() { b.WriteString(Safe(piece.String())); piece.Reset() }
	m, space, in := 0, false, false
	for i, r := range []rune(s) {
		for m < len(marks) && marks[m][1] <= i {
			m++
		}
		if m < len(marks) && marks[m][0] == i {
			flush()
			b.WriteString(open)
			in = true
		}
		sp := unicode.IsSpace(r)
		if !sp {
			piece.WriteRune(r)
		} else if !space {
			piece.WriteByte(' ')
		}
		space = sp
		if in && marks[m][1] == i+1 {
			flush()
			b.WriteString(close)
			in = false
		}
	}
	flush()
	if in {
		b.WriteString(close)
	}
	return strings.TrimSpace(b.String())
}

// Sparkline draws vals, oldest first, as one block character each (▁ to █) scaled between their
// minimum and maximum, sampled evenly down to at most width characters.
func Sparkline(vals []int64, width int) string {
	if len(vals) > width {
		step := float64(len(vals)-1) / float64(width-1)
		picked := make([]int64, width)
		for i := range picked {
			picked[i] = vals[int(float64(i)*step+0.5)]
		}
		vals = picked
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	bars := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range vals {
		i := 0
		if hi > lo {
			i = int((v - lo) * int64(len(bars)-1) / (hi - lo))
		}
		b.WriteRune(bars[i])
	}
	return b.String()
}

// Bar draws used of limit as width characters, # for used and . for the
// rest: "[##........]"; any use shows at least one #.
func Bar(used, limit int64, width int) string {
	n := 0
	if limit > 0 {
		n = int(min(used, limit) * int64(width) / limit)
	}
	if used > 0 && n == 0 {
		n = 1
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
