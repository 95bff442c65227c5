package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are titles as an attacker would write them: terminal escapes
// (window title, clear screen, OSC 8 link, cursor moves), forged rows, bidi
// overrides, C1 controls and invalid UTF-8.
var hostile = []string{
	"\x1b]0;pwned\x07Title",
	"\x1b[2J\x1b[HClear",
	"\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
	"row\r\n99  999,999,999  forged",
	"tab\tsplit\tcolumns",
	"abc\u202edcba\u202c \u2066iso\u2069 \u200emark\u200f",
	"c1 \u009b31m csi",
	"bad \xff\xfe utf8",
	"line\u2028sep",
}

func TestSafeLeavesNoControlAndKeepsText(t *testing.T) {
	for _, in := range hostile {
		out := Safe(in)
		for _, r := range out {
			if p, _ := visible(string(r)); p != string(r) {
				t.Errorf("Safe(%q) = %q: keeps %U", in, out, r)
			}
		}
		if !utf8.ValidString(out) {
			t.Errorf("Safe(%q) = %q: invalid UTF-8", in, out)
		}
	}
	for in, want := range map[string]string{
		"\x1b]0;x\x07":       `\x1b]0;x\x07`,
		"a\u202eb":           `a\u202eb`,
		"r\rn\nt\t":          `r\rn\nt\t`,
		"\xff":               `\xff`,
		"\u0085":             `\u0085`,
		"日本語 🎵 Ünïcödé — ok": "日本語 🎵 Ünïcödé — ok",
		"":                   "",
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClipNeverCutsAnEscape(t *testing.T) {
	in := "ab\x1b[2Jcd"
	want := map[int]string{
		1: "…", 2: "a…", 3: "ab…", 4: "ab…", 6: "ab…", 7: "ab\\x1b…", 8: "ab\\x1b[…",
		10: "ab\\x1b[2J…", 11: "ab\\x1b[2Jcd", 40: "ab\\x1b[2Jcd",
	}
	for w, exp := range want {
		got := Clip(in, w)
		if got != exp {
			t.Errorf("Clip(%q, %d) = %q, want %q", in, w, got, exp)
		}
		if n := utf8.RuneCountInString(got); n > w {
			t.Errorf("Clip(%q, %d) is %d runes", in, w, n)
		}
	}
	for _, in := range hostile {
		for w := 1; w < 60; w++ {
			got := Clip(in, w)
			if utf8.RuneCountInString(got) > w {
				t.Errorf("Clip(%q, %d) = %q: too long", in, w, got)
			}
			body := strings.TrimSuffix(got, Ellipsis)
			if !strings.HasPrefix(Safe(in), body) || !boundaries(in)[len(body)] {
				t.Errorf("Clip(%q, %d) = %q: not a prefix of Safe ending between escapes", in, w, got)
			}
		}
	}
	if got := Clip("exactly10!", 10); got != "exactly10!" {
		t.Errorf("text of exactly width runes was cut: %q", got)
	}
}

// boundaries returns the byte offsets in Safe(in) between the escapes and
// characters that Safe made of in's runes.
func boundaries(in string) map[int]bool {
	out := map[int]bool{0: true}
	n := 0
	for i := 0; i < len(in); {
		_, size := utf8.DecodeRuneInString(in[i:])
		n += len(Safe(in[i : i+size]))
		out[n] = true
		i += size
	}
	return out
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -9500: "-9,500", 1234567: "1,234,567",
		-9223372036854775808: "-9,223,372,036,854,775,808"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMark(t *testing.T) {
	for _, c := range []struct {
		s     string
		marks [][2]int
		want  string
	}{
		{"Bruno Mars live", [][2]int{{0, 5}, {6, 10}}, "[Bruno] [Mars] live"},
		{"東京タワー 夜景", [][2]int{{2, 5}}, "東京[タワー] 夜景"},
		{"a\n\n b \x1b[2J", [][2]int{{4, 5}}, `a [b] \x1b[2J`},
		{"no match", nil, "no match"},
		{"short", [][2]int{{3, 99}}, "sho[rt]"},
	} {
		if got := Mark(c.s, c.marks, "[", "]"); got != c.want {
			t.Errorf("Mark(%q, %v) = %q, want %q", c.s, c.marks, got, c.want)
		}
	}
}
