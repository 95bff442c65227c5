package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestVideoTakesDashIDsAndLinks: `video` takes an id that starts with '-'
// as typed, before or after its flags, and the links people paste; other
// input is a usage error (exit 2) naming what is wrong.
func TestVideoTakesDashIDsAndLinks(t *testing.T) {
	const id = "-2RVw2_QyxQ"
	chart := youtubetest.Sample()
	chart[0].Id = id
	emu := youtubetest.New()
	emu.SetChart("US", chart)
	p := newInproc(t, "", map[string]string{"YOUTUBE_API_KEY": "k"})
	p.capture(emu.StartTest(t), "US")
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
		p.reset()
		err := p.execute(args...)
		var h store.VideoHistory
		if jerr := json.Unmarshal(p.out.Bytes(), &h); err != nil || jerr != nil || h.Video.ID != id || !strings.Contains(p.out.String(), `"changes":`) {
			t.Errorf("%v: %v, id %q %v\n%s", args, err, h.Video.ID, jerr, p.out.String())
		}
	}
	if p.reset(); p.execute("video", id) != nil || !strings.Contains(p.out.String(), "https://youtu.be/"+id) {
		t.Errorf("video %s:\n%s", id, p.out.String())
	}
	if p.reset(); p.execute("video", "--help") != nil || !strings.Contains(p.out.String(), "youtu.be/ID") {
		t.Errorf("video --help:\n%s", p.out.String())
	}
	for args, want := range map[string]string{
		"abc":                                   "not an 11-character id",
		"https://example.com/watch?v=" + id:     "not a YouTube link",
		"https://www.youtube.com/feed/trending": "names no video",
		"youtu.be/short":                        "not 11 characters",
		"--bogus":                               "unknown flag: --bogus",
		id + " " + id:                           "one video id or URL",
	} {
		if err := p.execute(append([]string{"video"}, strings.Fields(args)...)...); exit(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("video %s: %v (exit %d), want exit 2 saying %q", args, err, exit(err), want)
		}
	}
	if err := p.execute("video", "sample-0099"); exit(err) != exitcode.NotFound {
		t.Errorf("video of an id never captured: %v (exit %d), want %d", err, exit(err), exitcode.NotFound)
	}
}

// TestVideoMarksYouTubeChanges: the human history has a line where its
// series crosses one of YouTube's changes, between the rows around it.
func TestVideoMarksYouTubeChanges(t *testing.T) {
	at := func(m, d int) time.Time { return time.Date(2026, time.Month(m), d, 12, 0, 0, 0, time.UTC) }
	v := int64(7)
	h := store.VideoHistory{
		Appearances: []store.Appearance{{Region: "US", Kind: store.KindChart, CapturedAt: at(8, 1), Rank: 3, Complete: true}},
		Points:      []store.StatsPoint{{At: at(9, 1), Views: &v, Source: store.SourceStats}},
		Changes:     store.ChangesCrossed(at(8, 1), at(9, 1)),
	}
	var b strings.Builder
	printHistory(&b, h, false)
	out := b.String()
	before, mark, after := strings.Index(out, "2026-08-01 12:00"), strings.Index(out, "2026-08-27 00:00  ── YouTube change *"), strings.Index(out, "2026-09-01 12:00")
	if before < 0 || mark < before || after < mark || !strings.Contains(out, "* 2026-08-27: YouTube changed view_count (views of every format counted at playback start); not comparable as-is across it. Source: https://") {
		t.Errorf("no line for 2026-08-27 between the rows of 08-01 and 09-01:\n%s", out)
	}
}
