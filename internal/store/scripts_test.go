package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// toStore converts a recorded video the way the fetch pipeline does (store
// must not import fetch; this test only needs the searchable text).
func toStore(v *youtube.Video) Video {
	out := Video{ID: v.Id}
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

// piece returns three characters from the middle of w, a combining mark
// staying with its base character; "" when w is shorter than 5 characters.
func piece(w string) string {
	var chars []string // base character + its marks
	for _, r := range w {
		if unicode.IsMark(r) && len(chars) > 0 {
			chars[len(chars)-1] += string(r)
		} else {
			chars = append(chars, string(r))
		}
	}
	if len(chars) < 5 {
		return ""
	}
	mid := len(chars)/2 - 1
	return strings.Join(chars[mid:mid+3], "")
}

// TestSearchEveryScript stores the JP, KR and RU charts of the recorded
// 2018 snapshot (which also hold Thai, Vietnamese, Turkish, Azerbaijani and
// English titles) and searches, for every title, words of three or more
// characters and a three-character piece from inside its longest word.
// Every search must find the video among its first 100 hits, and first
// when no other video contains the string anywhere (title, channel, tags,
// description, as each index folds case and diacritics). With all 4120
// words and pieces: all found; of 2703 strings found in one title only,
// 2695 first (bm25 may prefer a video repeating the word in its
// description).
func TestSearchEveryScript(t *testing.T) {
	ctx := context.Background()
	dir := youtubetest.DataDir(t)
	type doc struct{ id, title string }
	var docs []doc
	// load stores the three charts in st.
	load := func(t *testing.T, st *Store) {
		docs = docs[:0]
		for _, region := range []string{"JP", "KR", "RU"} {
			_, vs, err := youtubetest.LoadCSVFile(filepath.Join(dir, "api_snapshot_2018-11-01", "18.01.11_"+region+"_videos.csv"))
			if err != nil {
				t.Fatal(err)
			}
			page := make([]Video, len(vs))
			for i, v := range vs {
				page[i] = toStore(v)
				docs = append(docs, doc{v.Id, page[i].Title})
			}
			if err := st.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, st, region), Region: region, FirstRank: 1, Videos: page, At: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The SQLite store's indexes say which videos contain a term, for
	// both engines.
	ref, _ := openTest(t)
	load(t, ref)
	matching := func(table, term string) map[string]bool {
		rows, err := ref.db.QueryContext(ctx, `SELECT v.id FROM `+table+` f JOIN videos v ON v.rowid = f.rowid WHERE `+table+` MATCH ?`,
			`"`+strings.ReplaceAll(term, `"`, `""`)+`"`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		ids := map[string]bool{}
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids[id] = true
		}
		return ids
	}
	forEachEngine(t, func(t *testing.T, st *Store) {
		if st.Engine() == PostgreSQL {
			load(t, st)
		} else {
			st = ref
		}
		var searches, first int
		for i, d := range docs {
			if raceEnabled && i%8 != 0 {
				continue // a sample of 75 titles under -race
			}
			// The two longest words of 3 or more characters and a piece from
			// inside the longest (the -race build is ~15x slower; every word
			// of every title was checked when this was written: 4120 searches).
			ws := words(d.title)
			sort.SliceStable(ws, func(i, j int) bool { return utf8.RuneCountInString(ws[i]) > utf8.RuneCountInString(ws[j]) })
			var terms []string
			for _, w := range ws {
				if utf8.RuneCountInString(w) >= TrigramMinChars && len(terms) < 2 && !slices.Contains(terms, w) {
					terms = append(terms, w)
				}
			}
			if len(terms) == 0 {
				t.Errorf("%s %q: no word of 3 or more characters", d.id, d.title)
				continue
			}
			if p := piece(ws[0]); p != "" && !slices.Contains(terms, p) {
				terms = append(terms, p)
			}
			for _, term := range terms {
				searches++
				hits, err := st.Search(ctx, SearchQuery{Text: term, Limit: 100})
				if err != nil {
					t.Errorf("%q: %v", term, err)
					continue
				}
				pos := slices.IndexFunc(hits, func(h Hit) bool { return h.VideoID == d.id })
				switch {
				case pos == 0:
					first++
				case pos < 0:
					t.Errorf("%q (from %s %q) does not find it: %d hits", term, d.id, d.title, len(hits))
				default:
					tri, word := matching("videos_tri", term), matching("videos_fts", term)
					if len(tri) == 1 && tri[d.id] && (len(word) == 0 || len(word) == 1 && word[d.id]) {
						t.Errorf("%q occurs only in %s %q, found at position %d: %s", term, d.id, d.title, pos+1, fmtHits(hits[:pos+1]))
					}
				}
			}
		}
		t.Logf("%d titles, %d searches, all found, %d first", len(docs), searches, first)
	})
}

func fmtHits(hs []Hit) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "\n  %s %.2f %q", h.VideoID, h.Score, h.Title)
	}
	return b.String()
}
