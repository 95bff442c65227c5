package store

import "testing"

// TestRebind: SQLite placeholders become PostgreSQL's, numbered in order
// or as written, and a ? inside a string literal, a quoted identifier or a
// comment is left alone.
func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT ?, ?, ?3`:                         `SELECT $1, $2, $3`,
		`x = '?' AND y = ?`:                       `x = '?' AND y = $1`,
		`"a?" = ? -- what?` + "\n" + `AND ?2`:     `"a?" = $1 -- what?` + "\n" + `AND $2`,
		`'it''s?' ?`:                              `'it''s?' $1`,
		`'open ? `:                                `'open ? `,
		`json_extract(calls, '$."' || ?1 || '"')`: `json_extract(calls, '$."' || $1 || '"')`,
		`no placeholders`:                         `no placeholders`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
