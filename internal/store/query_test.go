package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseQuery(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "lofi beats", want: `"lofi" AND "beats"`},
		{in: `  "lofi hip hop"  radio `, want: `"lofi hip hop" AND "radio"`},
		{in: "beat*", want: `"beat" *`},
		{in: `"hip ho"*`, want: `"hip ho" *`},
		{in: "a b OR c d", want: `"a" AND ("b" OR "c") AND "d"`},
		{in: "a OR b OR c", want: `("a" OR "b" OR "c")`},
		{in: "OR a", want: `"OR" AND "a"`},
		{in: "a OR", want: `"a" AND "OR"`},
		{in: "a OR OR b", want: `"a" AND "OR" AND "OR" AND "b"`},
		{in: "or a", want: `"or" AND "a"`},
		{in: "new-zealand 3:45 e.g.", want: `"new-zealand" AND "3:45" AND "e.g."`},
		{in: `title:x NEAR(a b) NOT c`, want: `"title:x" AND "NEAR(a" AND "b)" AND "NOT" AND "c"`},
		{in: `a - b`, want: `"a" AND "b"`},
		{in: `ab"cd ef"`, want: `"ab" AND "cd ef"`},
		{in: `a -b`, want: `("a") NOT "b"`},
		{in: `a b -"c d" -e*`, want: `("a" AND "b") NOT "c d" NOT "e" *`},
		{in: `a OR -b c`, want: `("a" AND "OR" AND "c") NOT "b"`},
		{in: `a -OR`, want: `("a") NOT "OR"`},
		{in: `a --b -`, want: `"a" AND "--b"`},
		{in: `-a`, err: "only exclusions"},
		{in: "ÄÖÜ カラオケ", want: `"ÄÖÜ" AND "カラオケ"`},
		{in: "a\x00b", want: `"a" AND "b"`},
		{in: "", err: "empty query"},
		{in: " \t\n", err: "empty query"},
		{in: `"abc`, err: "unbalanced double quote"},
		{in: `a "b" "`, err: "unbalanced double quote"},
		{in: `- . :`, err: "no searchable words"},
		{in: `""`, err: "no searchable words"},
		{in: `*`, err: "no searchable words"},
		{in: strings.Repeat("a ", 33), err: "more than 32 terms"},
		{in: strings.Repeat("a", MaxQueryBytes+1), err: "longer than"},
	}
	for _, tt := range tests {
		got, err := ParseQuery(tt.in)
		if tt.err != "" {
			var qe *QueryError
			if !errors.As(err, &qe) || !strings.Contains(qe.Reason, tt.err) || qe.Query != tt.in {
				t.Errorf("ParseQuery(%q) = %q, %v; want QueryError %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseQuery(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseQuery checks that ParseQuery never panics and that every
// expression it returns is accepted by FTS5.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "lofi beats", `"exact phrase"`, `pre*`, `"ph ra"*`, "a OR b", "OR", `"`,
		`a"b"c`, "NEAR(a b, 3)", "col:x", "^a", "a + b", "-x", "\x00", "\xff\xfe", "a**", `""""`, "AND OR NOT",
		"🎵 music 🎶", "e.g. 3:45 - done."} {
		f.Add(s)
	}
	s, err := Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, in string) {
		expr, err := ParseQuery(in)
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("ParseQuery(%q): non-QueryError %v", in, err)
			}
			return
		}
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM videos_fts WHERE videos_fts MATCH ?`, expr).Scan(&n); err != nil {
			t.Fatalf("ParseQuery(%q) = %q rejected by FTS5: %v", in, expr, err)
		}
	})
}

func TestNeedsTrigram(t *testing.T) {
	for text, want := range map[string]bool{
		"lofi beats": false, "Путин": false, "kākāpō": false, "Bölüm": false,
		"ハロウィン": true, "東京": true, "방탄소년단": true, "ครั้งแรก": true, "lofi 東京": true,
	} {
		p, err := ParseSearch(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := needsTrigram(p.terms); got != want {
			t.Errorf("needsTrigram(%q) = %v", text, got)
		}
	}
}

// TestSearchTakesTheParsedQuery: a query parsed once (ParseSearch, as the
// search command does before opening the store) is what Search runs; its
// Text is not parsed again.
func TestSearchTakesTheParsedQuery(t *testing.T) {
	forEachEngine(t, testSearchTakesTheParsedQuery)
}

func testSearchTakesTheParsedQuery(t *testing.T, s *Store) {
	ctx := context.Background()
	if err := s.SaveSnapshot(ctx, Snapshot{RunID: startRun(t, s, "US"), Region: "US", FirstRank: 1, Videos: testVideos("lofi", 3)}); err != nil {
		t.Fatal(err)
	}
	p, err := ParseSearch("lofi")
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, SearchQuery{Text: `"unbalanced`, Parsed: p})
	if err != nil || len(hits) != 3 {
		t.Fatalf("Search with a parsed query: %d hits, %v; want the 3 lofi videos", len(hits), err)
	}
	if _, err := ParseSearch(`"unbalanced`); err == nil {
		t.Error(`ParseSearch("\"unbalanced"): no error`)
	}
}

// ParseQuery renders search text as the FTS5 MATCH expression the word
// index is asked (ParseSearch's syntax and errors).
func ParseQuery(text string) (string, error) {
	p, err := ParseSearch(text)
	if err != nil {
		return "", err
	}
	return renderMatch(p.terms, false), nil
}
