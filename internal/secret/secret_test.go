package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

func TestRedisURLSecrets(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://:PWa/bLEAK@127.0.0.1:6379/0":     "PWa/bLEAK",
		"redis://u:p%23w@127.0.0.1:6379/0":        "p#w",
		"redis://127.0.0.1:6379/0?password=qLEAK": "qLEAK",
		"rediss://user:PW#x?y@host:6380":          "PW#x?y",
	} {
		found := false
		for _, v := range RedisURLSecrets(raw) {
			found = found || v == want
		}
		if !found {
			t.Errorf("RedisURLSecrets(%q) = %q, want %q among them", raw, RedisURLSecrets(raw), want)
		}
	}
	if got := RedisURLSecrets("redis://127.0.0.1:6379/0"); len(got) != 0 {
		t.Errorf("no password, got %q", got)
	}
}
