package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// loadRecorded stores the first maxDates charts of a recorded trending
// CSV in st, one run each, in the file's order (both engines then number
// the videos in the same order, which the candidate bound follows).
func loadRecorded(t testing.TB, st *Store, path, region string, maxDates int) {
	t.Helper()
	ctx := context.Background()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dates, charts, err := youtubetest.LoadCSVCharts(f, region)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range dates {
		if i == maxDates {
			break
		}
		page := make([]Video, len(charts[d]))
		for j, v := range charts[d] {
			page[j] = toStore(v)
		}
		run, err := st.StartRun(ctx, Run{Region: region})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveSnapshot(ctx, Snapshot{RunID: run, Region: region, FirstRank: 1, Videos: page, At: at.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
}

// parityQueries are queries of every form made from the stored titles.
func parityQueries(t testing.TB, st *Store) map[string][]string {
	rows, err := st.db.Query(`SELECT title FROM videos ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		titles = append(titles, s)
	}
	rows.Close()
	q := map[string][]string{}
	long := func(ws []string) []string {
		var out []string
		for _, w := range ws {
			if utf8.RuneCountInString(w) >= 3 && !unsegmented(w) {
				out = append(out, w)
			}
		}
		return out
	}
	step := max(1, len(titles)/40)
	if raceEnabled {
		step = max(1, len(titles)/8) // the -race build is ~15x slower
	}
	for i := 0; i < len(titles); i += step {
		ws := words(titles[i])
		other := long(words(titles[(i+len(titles)/2)%len(titles)]))
		lw := long(ws)
		if len(lw) > 0 {
			q["word"] = append(q["word"], lw[0])
			rs := []rune(lw[0])
			q["prefix*"] = append(q["prefix*"], string(rs[:3])+"*")
			if p := piece(lw[0]); p != "" {
				q["substring"] = append(q["substring"], p)
			}
			if len(other) > 0 {
				q["a OR b"] = append(q["a OR b"], lw[0]+" OR "+other[0])
				q["-excluded"] = append(q["-excluded"], lw[0]+" -"+other[0])
			}
		}
		if len(lw) > 1 {
			q["a b"] = append(q["a b"], lw[0]+" "+lw[1])
			q["-excluded"] = append(q["-excluded"], lw[0]+" -"+lw[1])
		}
		if len(ws) > 1 && !unsegmented(ws[0]) {
			q[`"phrase"`] = append(q[`"phrase"`], `"`+ws[0]+" "+ws[1]+`"`)
		}
		for _, w := range ws {
			rs := []rune(w)
			if !unsegmented(w) {
				continue
			}
			q["cjk 1"] = append(q["cjk 1"], string(rs[:1]))
			if len(rs) >= 2 {
				q["cjk 2"] = append(q["cjk 2"], string(rs[len(rs)-2:]))
			}
			if len(rs) >= 3 {
				q["cjk 3+"] = append(q["cjk 3+"], string(rs[:3]))
				if len(lw) > 0 {
					q["cjk + word"] = append(q["cjk + word"], string(rs[:3])+" "+lw[0])
				}
				q["cjk -excluded"] = append(q["cjk -excluded"], string(rs[:3])+" -"+string(rs[len(rs)-1:]))
			}
			break
		}
	}
	return q
}

// TestSearchParityPostgres: on the recorded 2017 US and GB and 2020 KR
// and JP charts stored in both engines, every query of every form (words,
// phrases, prefixes, OR, exclusions, substrings, CJK and Hangul terms of
// 1, 2 and 3+ characters, alone, with words or excluded), with and without
// a region, matches the same set of videos on PostgreSQL as on SQLite
// (ranking may differ; docs/api.md says how).
func TestSearchParityPostgres(t *testing.T) {
	dir := youtubetest.DataDir(t)
	maxDates := 1000
	if raceEnabled {
		maxDates = 10
	}
	for _, ds := range []struct{ name, file, region string }{
		{"2017 US", "kaggle_youtube_new_2017/USvideos.csv", "US"},
		{"2017 GB", "kaggle_youtube_new_2017/GBvideos.csv", "GB"},
		{"2020 KR", "rsrishav_trending_2020/KR_youtube_trending_data.csv", "KR"},
		{"2020 JP", "rsrishav_trending_2020/JP_youtube_trending_data.csv", "JP"},
	} {
		t.Run(ds.region, func(t *testing.T) {
			ctx := context.Background()
			st, _ := openTest(t)
			pst := openPG(t)
			loadRecorded(t, st, filepath.Join(dir, ds.file), ds.region, maxDates)
			loadRecorded(t, pst, filepath.Join(dir, ds.file), ds.region, maxDates)
			ftsIntegrity(t, pst)
			qs := parityQueries(t, st)
			forms := make([]string, 0, len(qs))
			for f := range qs {
				forms = append(forms, f)
			}
			slices.Sort(forms)
			for _, form := range forms {
				same, matched := 0, 0
				for _, text := range qs[form] {
					for _, region := range []string{"", ds.region} {
						sq := SearchQuery{Text: text, Region: region}
						a, err := st.searchAll(ctx, sq, 100000)
						if err != nil {
							t.Fatalf("SQLite %q: %v", text, err)
						}
						b, err := pst.searchAll(ctx, sq, 100000)
						if err != nil {
							t.Fatalf("PostgreSQL %q: %v", text, err)
						}
						ids := func(hs []Hit) []string {
							var out []string
							for _, h := range hs {
								out = append(out, h.VideoID)
							}
							slices.Sort(out)
							return out
						}
						x, y := ids(a), ids(b)
						matched += len(x)
						if slices.Equal(x, y) {
							same++
							continue
						}
						t.Errorf("%s %s %q region %q: SQLite %d videos, PostgreSQL %d; only SQLite %v; only PostgreSQL %v",
							ds.name, form, text, region, len(x), len(y), diff(x, y), diff(y, x))
					}
				}
				t.Logf("%s %-14s %3d/%3d queries the same set (%d matches)", ds.name, form, same, 2*len(qs[form]), matched)
			}
		})
	}
}

// searchAll returns the best limit hits of q (any limit), unpaged, as the
// engine's search returns them to SearchPage.
func (s *Store) searchAll(ctx context.Context, q SearchQuery, limit int) ([]Hit, error) {
	p, err := ParseSearch(q.Text)
	if err != nil {
		return nil, err
	}
	return s.search(ctx, searchArgs{t: p.terms, text: q.Text, region: q.Region, limit: limit})
}

// diff is the first few of a not in b.
func diff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) && len(out) < 5 {
			out = append(out, s)
		}
	}
	return out
}

// TestSearchPageEngines: SearchPage on either engine returns the same
// shape: a snippet of the matching column with highlights as code point
// offsets of the matched words (a title's own brackets forge nothing, a
// CJK term marks the term, not its run), the regions, a cursor; a changed
// title is searched as changed (the triggers); SearchCandidates bounds
// the candidates; a cancelled context stops the search.
func TestSearchPageEngines(t *testing.T) {
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		vs := testVideos("s", 3)
		vs[0].Title = "[Official Video] Lofi hip hop beats"
		vs[1].Title = "BTS (방탄소년단) 'Dynamite' Official MV"
		vs[2].Title = "Lofi study session"
		run := startRun(t, s, "US")
		if err := s.SaveSnapshot(ctx, Snapshot{RunID: run, Region: "US", FirstRank: 1, Videos: vs, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		marked := func(h Hit) []string {
			rs := []rune(h.Snippet)
			var out []string
			for _, m := range h.Highlights {
				out = append(out, string(rs[m[0]:m[1]]))
			}
			return out
		}
		for _, c := range []struct {
			q    string
			want []string // ids
			mark string   // highlighted text of the first hit, joined with spaces
		}{
			{`"hip hop" lofi`, []string{"s-000"}, "Lofi hip hop"},
			{`lof*`, []string{"s-000", "s-002"}, "Lofi"},
			{`official -lofi`, []string{"s-001"}, "Official"},
			{`방탄`, []string{"s-001"}, "방탄"},
			{`방탄소 dynamite`, []string{"s-001"}, ""},
		} {
			hits, next, err := s.SearchPage(ctx, SearchQuery{Text: c.q, Limit: 1})
			if err != nil {
				t.Fatalf("%q: %v", c.q, err)
			}
			if len(hits) != 1 || hits[0].VideoID != c.want[0] && !slices.Contains(c.want, hits[0].VideoID) {
				t.Fatalf("%q: hits %+v, want one of %v", c.q, hits, c.want)
			}
			if (next == 1) != (len(c.want) > 1) {
				t.Errorf("%q: next %d with %d matches", c.q, next, len(c.want))
			}
			if got := strings.Join(marked(hits[0]), " "); c.mark != "" && got != c.mark {
				t.Errorf("%q: snippet %q marks %q, want %q", c.q, hits[0].Snippet, marked(hits[0]), c.mark)
			}
			if len(hits[0].Regions) != 1 || hits[0].Regions[0].Region != "US" {
				t.Errorf("%q: regions %+v", c.q, hits[0].Regions)
			}
		}

		vs[2].Title = "Jazz study session"
		saveRun(t, s, "US", time.Now(), vs)
		if hits, _ := s.Search(ctx, SearchQuery{Text: "jazz"}); len(hits) != 1 {
			t.Errorf("jazz after the title changed: %+v", hits)
		}
		if hits, _ := s.Search(ctx, SearchQuery{Text: "lofi"}); len(hits) != 1 {
			t.Errorf("lofi after the title changed: %+v", hits)
		}
		ftsIntegrity(t, s)

		setSearchCandidates(t, 2) // the two newest matches of "number" (every description)
		hits, err := s.Search(ctx, SearchQuery{Text: "description"})
		if err != nil || len(hits) != 2 || slices.ContainsFunc(hits, func(h Hit) bool { return h.VideoID == "s-000" }) {
			t.Errorf("bounded to 2 candidates: %+v, %v", hits, err)
		}

		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Search(cancelled, SearchQuery{Text: "description"}); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled search: %v", err)
		}
	})
}

// TestFoldPlain: for every character foldPlain takes (alone, and in texts
// mixing them with spaces), it cuts and folds as the SQL functions do, as
// foldRune folds it; it refuses characters next to them that fold or cut
// otherwise.
func TestFoldPlain(t *testing.T) {
	s := openPG(t)
	xs := []string{"Tokyo 東京 ラーメン", "  ABC  def ", "ヴァ ゔ が FAPO9x", ""}
	for r := rune(0); r <= 0x9FFF; r++ {
		if _, ok := foldPlain(string(r)); ok {
			xs = append(xs, string(r))
		}
	}
	if len(xs) < 21_000 {
		t.Fatalf("foldPlain takes %d characters", len(xs))
	}
	want := map[string]pgTerm{}
	if err := foldSQL(context.Background(), s.db, xs, want); err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		got, ok := foldPlain(x)
		if w := want[x]; !ok || got.folded != w.folded || !slices.Equal(got.words, w.words) {
			t.Errorf("%q: foldPlain %+v %v, SQL %+v", x, got, ok, w)
		}
		if r := []rune(x); len(r) == 1 && string(foldRune(r[0])) != want[x].folded {
			t.Errorf("%q: foldRune %q, SQL %q", x, foldRune(r[0]), want[x].folded)
		}
	}
	for _, x := range []string{"É", "・", "か\u3099", "ｱ", "\uF900", "Ⅻ", "a-b", "ß"} {
		if _, ok := foldPlain(x); ok {
			t.Errorf("foldPlain takes %q", x)
		}
	}
}

// TestWordSnippetFolds: a snippet highlights the words whose folded form
// matches: diacritics removed (Café, Ünïcödé), other decompositions kept
// (ガ is not カ).
func TestWordSnippetFolds(t *testing.T) {
	f := map[string]pgTerm{}
	var and [][]qterm
	for _, w := range []string{"cafe", "unicode", "ガス"} {
		f[w] = pgTerm{words: []string{w}, folded: w}
		and = append(and, []qterm{{text: w}})
	}
	snip, marks := wordSnippet([]string{"Le Café Ünïcödé カス ガス", "", "", ""}, terms{and: and}, f, 16)
	if want := [][2]int{{3, 7}, {8, 15}, {19, 21}}; !slices.Equal(marks, want) {
		t.Errorf("%q: marks %v, want %v", snip, marks, want)
	}
}

// TestGINPendingLists (PostgreSQL): the search indexes keep at most 128 kB of new entries pending,
// which every search using them reads (migration 0006); entry_pages_video none.
func TestGINPendingLists(t *testing.T) {
	s := openPG(t)
	got, err := column[string](context.Background(), s.db, `
SELECT relname || ' ' || array_to_string(reloptions, ',') FROM pg_class
WHERE relname IN ('video_search_doc', 'video_search_tri', 'entry_pages_video') ORDER BY relname`)
	want := []string{"entry_pages_video fastupdate=off", "video_search_doc gin_pending_list_limit=128", "video_search_tri gin_pending_list_limit=128"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("index options %q (%v), want %q", got, err, want)
	}
}

// TestSearchPrefixByPlace: on PostgreSQL a best-effort prefix of an unsegmented script (a CJK term
// too short for the trigram index) is ranked as substring hits are, by where the term occurs (title,
// channel title, else), newest first within; ts_rank_cd put an older title holding the term twice
// first, and ranking with it cost more than finding the candidates (issue 42 item 2).
func TestSearchPrefixByPlace(t *testing.T) {
	s := openPG(t)
	vs := []Video{ // oldest first
		{ID: "title-old", Title: "東京 東京", ChannelTitle: "ch"},
		{ID: "description", Title: "other", ChannelTitle: "ch", Description: "東京の話"},
		{ID: "channel", Title: "other", ChannelTitle: "東京チャンネル"},
		{ID: "title-new", Title: "東京タワー", ChannelTitle: "ch"},
	}
	for _, v := range vs {
		saveRun(t, s, "JP", time.Now(), []Video{v})
	}
	var got []string
	for _, h := range search(t, s, SearchQuery{Text: "東京"}) {
		got = append(got, h.VideoID)
	}
	if want := []string{"title-new", "title-old", "channel", "description"}; !slices.Equal(got, want) {
		t.Errorf("東京: %v, want %v", got, want)
	}
}
