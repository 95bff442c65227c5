package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSearchTokenClass: the character class search_tokens cuts words
// with in the PostgreSQL search migration is the set of characters
// SQLite's unicode61 tokenizer (as this store builds it) keeps in tokens,
// code point by code point, so both engines find the same words (SQLite's
// tokenizer is the reference: this test reads it, and the migration's text).
func TestSearchTokenClass(t *testing.T) {
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := st.db
	db.Exec(`CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')`)
	db.Exec(`CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')`)
	tok := make([]bool, 0x110000)
	for base := 0; base < 0x110000; base += 4096 {
		var b strings.Builder
		var cps []int
		for cp := base; cp < base+4096; cp++ {
			if (cp >= 0xD800 && cp <= 0xDFFF) || !utf8.ValidRune(rune(cp)) {
				continue
			}
			cps = append(cps, cp)
			b.WriteString("q" + string(rune(cp)) + "q ")
		}
		db.Exec(`DELETE FROM f`)
		db.Exec(`INSERT INTO f (rowid, x) VALUES (1, ?)`, b.String())
		rows, _ := db.Query(`SELECT term FROM v ORDER BY offset`)
		var terms []string
		for rows.Next() {
			var x string
			rows.Scan(&x)
			terms = append(terms, x)
		}
		rows.Close()
		i := 0
		for _, cp := range cps {
			if i < len(terms) && terms[i] != "q" { // one token q?q
				tok[cp] = true
				i++
			} else {
				i += 2
			}
		}
		if i != len(terms) {
			t.Fatalf("block %x: %d terms, walked %d", base, len(terms), i)
		}
	}
	var out []string
	for cp := 0; cp < 0x110000; {
		if !tok[cp] {
			cp++
			continue
		}
		j := cp
		for j+1 < 0x110000 && tok[j+1] {
			j++
		}
		esc := func(c int) string {
			if c > 0xFFFF {
				return fmt.Sprintf(`\U%08x`, c)
			}
			return fmt.Sprintf(`\u%04x`, c)
		}
		if j == cp {
			out = append(out, esc(cp))
		} else {
			out = append(out, esc(cp)+"-"+esc(j))
		}
		cp = j + 1
	}
	mig, err := os.ReadFile("../../migrations/postgres/0002_search.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := "'[" + strings.Join(out, "") + "]+'"; !strings.Contains(string(mig), want) {
		t.Errorf("search_tokens' class differs from SQLite's token characters; want (%d ranges):\n%s", len(out), want)
	}
}
