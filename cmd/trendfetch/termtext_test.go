package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// hostileTitle sets the window title, clears the screen, plants an OSC 8
// link, forges a row with \r\n and a tab, and reverses what follows with a
// bidi override, all in one video title.
const hostileTitle = "zebrahostile \x1b]0;pwned\x07 \x1b[2J \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ a\r\n1  999  forged\tcol \u202eesrever\u202c \u2066iso\u2069 \u200e\u0085end"

// terminalUnsafe returns the first byte or rune of out that drives a
// terminal or reorders text: C0 controls but \n, DEL, C1 controls, bidi
// controls. "" when none.
func terminalUnsafe(out string) string {
	for _, r := range out {
		switch {
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f),
			r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return string(r)
		}
	}
	return ""
}

// TestHumanOutputIsTerminalSafe: a title and an upstream error message
// full of terminal escapes and bidi overrides reach `chart`, `search`,
// `video` and `runs` only as visible escapes (\x1b, \u202e); --json and
// --csv keep the exact text.
func TestHumanOutputIsTerminalSafe(t *testing.T) {
	chart := youtubetest.Sample()
	chart[0].Snippet.Title = hostileTitle
	chart[1].Snippet.ChannelTitle = "chan\x1b[31mred\u202e"
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	// A run whose upstream error message holds escapes, for the runs table.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400,
			"message": "\u202e\x1b[2J",
			"errors":  []map[string]any{{"reason": "badRequest", "domain": "global", "message": "x"}}}})
		w.Write(body)
	}))
	t.Cleanup(bad.Close)
	if res := e.run("--api-endpoint", bad.URL+"/", "run", "--region", "US"); res.code != 1 {
		t.Fatalf("failing run: exit %d\n%s", res.code, res.stderr)
	}

	id := chart[0].Id
	for _, args := range [][]string{
		{"chart", "--region", "US"},
		{"search", "zebrahostile"},
		{"search", "red"},
		{"video", id},
		{"video", chart[1].Id},
		{"runs"},
	} {
		res := e.run(args...)
		if res.code != 0 {
			t.Errorf("%v: exit %d\n%s", args, res.code, res.stderr)
			continue
		}
		if c := terminalUnsafe(res.stdout); c != "" {
			t.Errorf("%v: %q reaches the terminal:\n%q", args, c, res.stdout)
		}
		if !strings.Contains(res.stdout, `\x1b`) || !strings.Contains(res.stdout, `\u202e`) {
			t.Errorf("%v: the escapes are not shown as \\x1b and \\u202e:\n%s", args, res.stdout)
		}
	}
	if res := e.run("runs"); !strings.Contains(res.stdout, `\u202e\x1b[2J`) {
		t.Errorf("runs: the reason is not shown escaped:\n%s", res.stdout)
	}

	// Machine output stays exact.
	var c chartOut
	res := e.run("chart", "--region", "US", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &c); err != nil || c.Entries[0].Title != hostileTitle {
		t.Errorf("chart --json changed the title: %v %q", err, c.Entries[0].Title)
	}
	res = e.run("chart", "--region", "US", "--csv")
	if !strings.Contains(res.stdout, `"`+hostileTitle+`"`) {
		t.Errorf("chart --csv changed the title:\n%.300q", res.stdout)
	}
	var hits []struct {
		Title string `json:"title"`
	}
	res = e.run("search", "zebrahostile", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &hits); err != nil || len(hits) != 1 || hits[0].Title != hostileTitle {
		t.Errorf("search --json changed the title: %v %+v", err, hits)
	}
	var h store.VideoHistory
	res = e.run("video", id, "--json")
	if err := json.Unmarshal([]byte(res.stdout), &h); err != nil || h.Video.Title != hostileTitle {
		t.Errorf("video --json changed the title: %v %q", err, h.Video.Title)
	}
	var runs []store.Run
	res = e.run("runs", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &runs); err != nil || len(runs) != 2 || !strings.Contains(runs[0].Reason, "\u202e\x1b[2J") {
		t.Errorf("runs --json changed the reason: %v %+v", err, runs)
	}
	res = e.run("export", "--format", "jsonl")
	if !strings.Contains(res.stdout, `zebrahostile \u001b]0;pwned\u0007`) {
		t.Errorf("export changed the title:\n%.400s", res.stdout)
	}
}
