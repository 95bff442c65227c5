package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestVideoTakesDashIDsAndLinks: `video` takes an id that starts with '-'
// as typed, before or after its flags, and the links people paste; other
// input exits 2 naming what is wrong.
func TestVideoTakesDashIDsAndLinks(t *testing.T) {
	const id = "-2RVw2_QyxQ"
	chart := youtubetest.Sample()
	chart[0].Id = id
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	for _, args := range [][]string{
		{"video", id, "--json"},
		{"video", "--json", id},
		{"--log-level", "warn", "video", "--json", "--", id},
		{"video", "--json", "https://www.youtube.com/watch?v=" + id + "&t=42s"},
		{"video", "--json", "https://m.youtube.com/watch?feature=share&v=" + id},
		{"video", "--json", "youtu.be/" + id + "?si=abc"},
		{"video", "--json", "https://youtube.com/shorts/" + id},
		{"video", "--json", "www.youtube.com/live/" + id + "?feature=share"},
	} {
		res := e.run(args...)
		var h store.VideoHistory
		if err := json.Unmarshal([]byte(res.stdout), &h); res.code != 0 || err != nil || h.Video.ID != id {
			t.Errorf("%v: exit %d, id %q %v\n%s", args, res.code, h.Video.ID, err, res.stderr)
		}
	}
	if res := e.run("video", id); res.code != 0 || !strings.Contains(res.stdout, "https://youtu.be/"+id) {
		t.Errorf("video %s: exit %d\n%s%s", id, res.code, res.stdout, res.stderr)
	}
	if res := e.run("video", "--help"); res.code != 0 || !strings.Contains(res.stdout, "youtu.be/ID") {
		t.Errorf("video --help: exit %d\n%s", res.code, res.stdout)
	}
	for args, want := range map[string]string{
		"abc":                                   "not an 11-character id",
		"https://example.com/watch?v=" + id:     "not a YouTube link",
		"https://www.youtube.com/feed/trending": "names no video",
		"youtu.be/short":                        "not 11 characters",
		"--bogus":                               "unknown flag: --bogus",
		id + " " + id:                           "one video id or URL",
	} {
		res := e.run(append([]string{"video"}, strings.Fields(args)...)...)
		if res.code != 2 || !strings.Contains(res.stderr, want) {
			t.Errorf("video %s: exit %d, want 2 saying %q\n%s", args, res.code, want, res.stderr)
		}
	}
}
