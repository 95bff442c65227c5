package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// toStore converts a recorded video the way the fetch pipeline does (store
// must not import fetch; this test only needs the searchable text).
func toStore(v *youtube.Video) store.Video {
	out := store.Video{ID: v.Id}
	if s := v.Snippet; s != nil {
		out.Title, out.Description = s.Title, s.Description
		out.ChannelID, out.ChannelTitle, out.CategoryID = s.ChannelId, s.ChannelTitle, s.CategoryId
		out.Tags = s.Tags
	}
	return out
}

// words splits a title at every character that is not a letter, number or
// mark: "【閲覧注意】ハロウィン気乗り" -> 閲覧注意, ハロウィン気乗り.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	})
}

// TestSearchEveryScript stores the JP, KR and RU charts of the recorded
// 2018 snapshot and searches, for every title, each of its words of three or
// more characters and a three-character piece from inside its longest word:
// every search must find the video; when the string occurs in no other
// stored title or channel title, the video must be the first hit.
func TestSearchEveryScript(t *testing.T) {
	ctx := context.Background()
	dir := youtubetest.DataDir(t)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "scripts.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	type doc struct{ id, title, text string } // text: folded title + channel
	var docs []doc
	for _, region := range []string{"JP", "KR", "RU"} {
		_, vs, err := youtubetest.LoadCSVFile(filepath.Join(dir, "api_snapshot_2018-11-01", "18.01.11_"+region+"_videos.csv"), "")
		if err != nil {
			t.Fatal(err)
		}
		page := make([]store.Video, len(vs))
		for i, v := range vs {
			page[i] = toStore(v)
			docs = append(docs, doc{v.Id, page[i].Title, strings.ToLower(page[i].Title + "\n" + page[i].ChannelTitle)})
		}
		run, err := st.StartRun(ctx, store.Run{Region: region})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SavePage(ctx, run, region, 1, page, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Check(ctx); err != nil {
		t.Fatal(err)
	}

	var searches, distinct, first int
	for _, d := range docs {
		terms := map[string]bool{}
		longest := ""
		for _, w := range words(d.title) {
			if utf8.RuneCountInString(w) >= store.TrigramMinChars {
				terms[w] = true
			}
			if utf8.RuneCountInString(w) > utf8.RuneCountInString(longest) {
				longest = w
			}
		}
		if rs := []rune(longest); len(rs) >= 5 {
			mid := len(rs)/2 - 1
			terms[string(rs[mid:mid+3])] = true
		}
		if len(terms) == 0 {
			t.Errorf("%s %q: no word of 3 or more characters", d.id, d.title)
		}
		for term := range terms {
			searches++
			hits, err := st.Search(ctx, store.SearchQuery{Text: term, Limit: store.MaxSearchLimit})
			if err != nil {
				t.Errorf("%q: %v", term, err)
				continue
			}
			pos := -1
			for i, h := range hits {
				if h.VideoID == d.id {
					pos = i
					break
				}
			}
			if pos < 0 {
				t.Errorf("%q (from %s %q) does not find it: %d hits", term, d.id, d.title, len(hits))
				continue
			}
			n := 0
			for _, o := range docs {
				if strings.Contains(o.text, strings.ToLower(term)) {
					n++
				}
			}
			if n == 1 {
				distinct++
				if pos == 0 {
					first++
				} else {
					t.Errorf("%q occurs only in %s %q, found at position %d: %s", term, d.id, d.title, pos+1, fmtHits(hits[:pos+1]))
				}
			}
		}
	}
	t.Logf("%d titles, %d searches, all found; %d/%d distinctive strings ranked first", len(docs), searches, first, distinct)
}

func fmtHits(hs []store.Hit) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "\n  %s %.2f %q", h.VideoID, h.Score, h.Title)
	}
	return b.String()
}
