package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestSetScrubsEveryFormOfEveryValue(t *testing.T) {
	var s Set
	s.Add("AIza-key/with+special=chars", "k", "  ", "second-key")
	for _, in := range []string{
		"GET /v3/videos?key=AIza-key/with+special=chars&x=1",
		"GET /v3/videos?key=AIza-key%2Fwith%2Bspecial%3Dchars&x=1",
		`{"error":"second-key"}`,
	} {
		if out := s.String(in); bytes.Contains([]byte(out), []byte("key/with")) || bytes.Contains([]byte(out), []byte("with%2B")) || bytes.Contains([]byte(out), []byte("second-key")) {
			t.Errorf("String(%q) = %q: secret left", in, out)
		}
	}
	if got := s.String("a k b"); got != "a k b" {
		t.Errorf("a value shorter than 4 bytes was registered: %q", got)
	}
	var nilSet *Set
	if got := nilSet.String("second-key"); got != "second-key" {
		t.Errorf("nil set changed text: %q", got)
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	var s Set
	s.Add("hunter22")
	base := io.ErrUnexpectedEOF
	err := s.Error(fmt.Errorf("password hunter22: %w", base))
	if err.Error() != "password [REDACTED]: unexpected EOF" {
		t.Errorf("Error() = %q", err.Error())
	}
	if !errors.Is(err, base) {
		t.Error("errors.Is lost the chain")
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

func TestWriterScrubsAndAddLater(t *testing.T) {
	var s Set
	var buf bytes.Buffer
	w := s.Writer(&buf)
	fmt.Fprint(w, "before hunter22\n")
	s.Add("hunter22")
	n, err := fmt.Fprint(w, "after hunter22\n")
	if err != nil || n != len("after hunter22\n") {
		t.Errorf("Write = %d, %v", n, err)
	}
	if got := buf.String(); got != "before hunter22\nafter [REDACTED]\n" {
		t.Errorf("written %q", got)
	}
}

func TestURLSecrets(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://:PWa/bLEAK@127.0.0.1:6379/0":     "PWa/bLEAK",
		"redis://u:p%23w@127.0.0.1:6379/0":        "p#w",
		"redis://127.0.0.1:6379/0?password=qLEAK": "qLEAK",
		"rediss://user:PW#x?y@host:6380":          "PW#x?y",
		"postgres://u:pg%40PW@db/trendfetch":      "pg@PW",
		"postgresql://db/t?password=pgQ%26":       "pgQ&",
	} {
		found := false
		for _, v := range URLSecrets(raw) {
			found = found || v == want
		}
		if !found {
			t.Errorf("URLSecrets(%q) = %q, want %q among them", raw, URLSecrets(raw), want)
		}
	}
	for _, raw := range []string{"redis://127.0.0.1:6379/0", "postgres://u@db:5432/trendfetch?sslmode=disable"} {
		if got := URLSecrets(raw); len(got) != 0 {
			t.Errorf("%s: no password, got %q", raw, got)
		}
	}
}

// TestFragmentsOfASecretAreScrubbed: an upstream body that echoes a key
// minus its last characters (or from its middle on), or a parser error that
// quotes a password between other characters, is masked: any run of
// FragmentLen or more bytes of a secret. Shorter runs and ordinary text
// stay, and adjacent fragments become one Mask.
func TestFragmentsOfASecretAreScrubbed(t *testing.T) {
	const key = "AIzaSyD-FRAGMENT-0123456789abcdefghijk"
	var s Set
	s.Add(key, "pw12")
	for _, tc := range []struct{ in, want string }{
		{"key=" + key[:len(key)-3] + "&x=1", "key=" + Mask + "&x=1"},
		{"bad key ..." + key[10:] + "!", "bad key ..." + Mask + "!"},
		{`"` + key[5:5+FragmentLen] + `"`, `"` + Mask + `"`},
		{key[:FragmentLen-1] + " and " + key[20:20+FragmentLen-1], key[:FragmentLen-1] + " and " + key[20:20+FragmentLen-1]},
		{"a " + key[:12] + " b " + key[12:30] + " c", "a " + Mask + " b " + Mask + " c"},
		{key[:12] + key[12:], Mask},
		{"pw12 and pw123", Mask + " and " + Mask + "3"},
		{"nothing secret here at all", "nothing secret here at all"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// An encoded form is fragmented too: a key with '/' quoted escaped.
	var e Set
	e.Add("p/w-SECRET-value")
	if got := e.String("url=p%2Fw-SECRET-val..."); strings.Contains(got, "SECRET") {
		t.Errorf("escaped fragment left: %q", got)
	}
}

// TestURLSecretsOfMalformedURLs: a URL with one slash after the scheme
// yields its password as go-redis quotes it (":PW@host" minus the colon),
// and content that is no Redis URL at all (a URL file holding only the
// password) is a secret whole.
func TestURLSecretsOfMalformedURLs(t *testing.T) {
	for raw, want := range map[string]string{
		"redis:/:ShortPW@127.0.0.1:6379": "ShortPW",
		"rediss:/user:pw2x@host:6380":    "pw2x",
		"JustThePassword":                "JustThePassword",
		"redis//:pw@host":                "pw",
		"redis:/host:6379":               "redis:/host:6379",
		"http://:HttpPW@host:6379":       "HttpPW",
		"redis://:ok@127.0.0.1:6379/0":   "ok",
	} {
		got := URLSecrets(raw)
		found := false
		for _, v := range got {
			found = found || v == want
		}
		if !found {
			t.Errorf("URLSecrets(%q) = %q, want %q among them", raw, got, want)
		}
	}
	if got := URLSecrets("redis://:ok@127.0.0.1:6379/0"); len(got) != 2 {
		t.Errorf("a well-formed URL is not secret whole, only its password: %q", got)
	}
}

// BenchmarkString scrubs 64 KiB of chart-like text (no secret in it) with
// two API keys and a Redis password registered: the cost every Write to
// stdout and stderr pays.
func BenchmarkString(b *testing.B) {
	var s Set
	s.Add("AIzaSyD-bench-key-0123456789abcdefghijk", "AIzaSyF-other-key-9876543210zyxwvutsrqp", "redis-pass-word-42")
	line := "    1  5,000,000  200,000  20,000    Sample video 1 (synthetic) — Sample Channel 1\n"
	text := strings.Repeat(line, 64<<10/len(line))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.String(text)
	}
}
