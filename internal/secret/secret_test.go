package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
)

func TestSetScrubsEveryFormOfEveryValue(t *testing.T) {
	var s Set
	s.AddKey("AIza-key/with+special=chars")
	s.Add("k", "  ", "second-key-0123")
	for _, in := range []string{
		"GET /v3/videos?key=AIza-key/with+special=chars&x=1",
		"GET /v3/videos?key=AIza-key%2Fwith%2Bspecial%3Dchars&x=1",
		`{"error":"second-key-0123"}`,
	} {
		if out := s.String(in); bytes.Contains([]byte(out), []byte("key/with")) || bytes.Contains([]byte(out), []byte("with%2B")) || bytes.Contains([]byte(out), []byte("second-key")) {
			t.Errorf("String(%q) = %q: secret left", in, out)
		}
	}
	if got := s.String("a k b"); got != "a k b" {
		t.Errorf("a value shorter than 4 bytes was registered: %q", got)
	}
	var nilSet *Set
	if got := nilSet.String("second-key-0123"); got != "second-key-0123" {
		t.Errorf("nil set changed text: %q", got)
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	var s Set
	s.Add("hunter22-prod-7")
	base := io.ErrUnexpectedEOF
	err := s.Error(fmt.Errorf("password hunter22-prod-7: %w", base))
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
	fmt.Fprint(w, "before hunter22-prod-7\n")
	s.Add("hunter22-prod-7")
	n, err := fmt.Fprint(w, "after hunter22-prod-7\n")
	if err != nil || n != len("after hunter22-prod-7\n") {
		t.Errorf("Write = %d, %v", n, err)
	}
	if got := buf.String(); got != "before hunter22-prod-7\nafter [REDACTED]\n" {
		t.Errorf("written %q", got)
	}
}

// TestSecretShapesMaskedEverywhere: the shapes in which a secret reached
// output in the adversarial runs (an API key and its encoded forms, echoed
// whole, cut or from its middle, in a URL, a query, a JSON body, a header;
// a strong password in a URL's userinfo, a query, an error) stay masked by
// String wherever they appear.
func TestSecretShapesMaskedEverywhere(t *testing.T) {
	const key, pw, tok = "AIzaSyD-SHAPES/never+leak=0123456789ab", "redis-PW-never-leak-42", "serve-token-0123456789"
	var s Set
	s.AddKey(key)
	s.Add(pw, tok)
	j := strings.ReplaceAll(key, "/", `\/`)
	for _, in := range []string{
		key, "key=" + key, "key=" + url.QueryEscape(key), url.PathEscape(key), `{"key":"` + key + `"}`, j,
		"GET https://www.googleapis.com/youtube/v3/videos?part=snippet&key=" + key + "&chart=mostPopular HTTP/1.1",
		"<html>bad gateway for GET /youtube/v3/videos?key=" + url.QueryEscape(key) + "</html>",
		"backend failed for key " + key[:len(key)-3] + "...", "(tail " + key[15:] + ")", "key prefix " + key[:12],
		"x-goog-api-key: " + key, "title " + key + " echoed", `"` + key[5:5+FragmentLen] + `"`,
		"redis://:" + pw + "@127.0.0.1:6379/0", "redis://user:" + url.PathEscape(pw) + "@h:6379", "rediss://127.0.0.1/0?password=" + pw,
		"postgres://u:" + pw + "@db/trendfetch", "WRONGPASS " + pw, `parse "redis://:` + pw + `@h": invalid port`,
		"Authorization: Bearer " + tok, "token=" + tok, "GET /v1/runs?token=" + url.QueryEscape(tok), `{"error":"` + pw + `"}`,
		"AUTH " + pw, pw + "\n", "\t" + pw, "(" + tok + ")", "user=x password=" + pw + " host=db",
	} {
		out := s.String(in)
		for _, secret := range []string{key, url.QueryEscape(key), pw, tok, key[:FragmentLen], key[len(key)-FragmentLen:], key[15 : 15+FragmentLen]} {
			if strings.Contains(out, secret) {
				t.Errorf("String(%q) = %q: %q left", in, out, secret)
			}
		}
		if !strings.Contains(out, Mask) {
			t.Errorf("String(%q) = %q: nothing masked", in, out)
		}
	}
}

// TestFragmentsOfAKeyAreScrubbed: an upstream body that echoes a key minus
// its last characters (or from its middle on) is masked: any run of
// FragmentLen or more bytes of an API key. Shorter runs and ordinary text
// stay, and adjacent fragments become one Mask.
func TestFragmentsOfAKeyAreScrubbed(t *testing.T) {
	const key = "AIzaSyD-FRAGMENT-0123456789abcdefghijk"
	var s Set
	s.AddKey(key)
	s.Add("pw12")
	for _, tc := range []struct{ in, want string }{
		{"key=" + key[:len(key)-3] + "&x=1", "key=" + Mask + "&x=1"},
		{"bad key ..." + key[10:] + "!", "bad key ..." + Mask + "!"},
		{`"` + key[5:5+FragmentLen] + `"`, `"` + Mask + `"`},
		{key[:FragmentLen-1] + " and " + key[20:20+FragmentLen-1], key[:FragmentLen-1] + " and " + key[20:20+FragmentLen-1]},
		{"a " + key[:12] + " b " + key[12:30] + " c", "a " + Mask + " b " + Mask + " c"},
		{key[:12] + key[12:], Mask},
		{"pw12 and pw123", "pw12 and pw123"},
		{"key=pw12&pw=pw12", "key=" + Mask + "&pw=" + Mask},
		{"nothing secret here at all", "nothing secret here at all"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// An encoded form is fragmented too: a key with '/' quoted escaped.
	var e Set
	e.AddKey("p/w-SECRET-value")
	if got := e.String("url=p%2Fw-SECRET-val..."); strings.Contains(got, "SECRET") {
		t.Errorf("escaped fragment left: %q", got)
	}
}

// TestCommonSecretsMaskedOnlyInContext (issue 40 item 1): a password that
// is a word, short, or a name the configuration shows, and a check-in URL's
// path segment such as "ping", are masked where they stand as that secret
// (userinfo, key=/password=/token= parameters, Authorization) and nowhere
// else: unit files, job names and `version` keep "trendfetch".
func TestCommonSecretsMaskedOnlyInContext(t *testing.T) {
	var s Set
	s.Add("trendfetch", "ping", "trendfetch_prod1")
	s.Public("trendfetch_prod1")
	for _, tc := range []struct{ in, want string }{
		{"User=trendfetch", "User=trendfetch"},
		{"name: trendfetch-us", "name: trendfetch-us"},
		{"trendfetch 301fde8", "trendfetch 301fde8"},
		{"Shopping haul: camping and sleeping gear", "Shopping haul: camping and sleeping gear"},
		{"dbname=trendfetch_prod1", "dbname=trendfetch_prod1"},
		{"postgres://trendfetch:trendfetch@db/trendfetch", "postgres://trendfetch:" + Mask + "@db/trendfetch"},
		{"postgres://u:trendfetch_prod1@db/x", "postgres://u:" + Mask + "@db/x"},
		{"host=db password=trendfetch user=x", "host=db password=" + Mask + " user=x"},
		{"GET /v3/videos?key=ping&x=1", "GET /v3/videos?key=" + Mask + "&x=1"},
		{"Authorization: Bearer trendfetch", "Authorization: Bearer " + Mask},
		{"Authorization: trendfetch", "Authorization: " + Mask},
		{`{"password": "trendfetch"}`, `{"password": "` + Mask + `"}`},
		{"key=trendfetchX", "key=trendfetchX"},
		{`{"key": "trendfetch"}`, `{"key": "trendfetch"}`},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCapturedKeepsAllButTheKey (issue 40 item 1): captured text loses an
// exact occurrence of a strong API key and nothing else: not a fragment of
// it, not a password, not a check-in URL's path segment.
func TestCapturedKeepsAllButTheKey(t *testing.T) {
	const key = "AIzaSyE-CAPTURED-never-0123456789abcd"
	var s Set
	s.AddKey(key, "short-key")
	s.Add("ping", "hc.example/ping", "redis-pass-word-42")
	for in, want := range map[string]string{
		"Shopping haul: camping and sleeping gear": "Shopping haul: camping and sleeping gear",
		"title " + key:                     "title " + Mask,
		"https://i.ytimg.com/" + key + "/": "https://i.ytimg.com/" + Mask + "/",
		"cut " + key[:20]:                  "cut " + key[:20],
		"redis-pass-word-42 ping":          "redis-pass-word-42 ping",
		"short-key":                        "short-key",
	} {
		if got := s.Captured(in); got != want {
			t.Errorf("Captured(%q) = %q, want %q", in, got, want)
		}
	}
	var nilSet *Set
	if got := nilSet.Captured(key); got != key {
		t.Errorf("nil set changed text: %q", got)
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
	s.AddKey("AIzaSyD-bench-key-0123456789abcdefghijk", "AIzaSyF-other-key-9876543210zyxwvutsrqp")
	s.Add("redis-pass-word-42", "trendfetch", "ping")
	line := "    1  5,000,000  200,000  20,000    Sample video 1 (synthetic) — Sample Channel 1\n"
	text := strings.Repeat(line, 64<<10/len(line))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.String(text)
	}
}
