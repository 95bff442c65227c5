// Package storetest holds test helpers shared by several packages' tests: synthetic video text
// (Zipf-distributed pseudo-words, so searches see posting lists shaped like real text) and DuckDB,
// the Parquet reader. It imports nothing of trendfetch, so package store's own tests can use it.
package storetest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Vocab is a deterministic list of pseudo-words and a Zipf sampler over it
// (exponent 1.1), not safe for concurrent use.
type Vocab struct {
	// Words are the distinct pseudo-words, most common first.
	Words []string
	// Rng is the source of every draw; benchmarks may use it for numbers.
	Rng  *rand.Rand
	zipf *rand.Zipf
}

// NewVocab returns n distinct pseudo-words (2-5 syllables) and a sampler,
// the same for the same seed.
func NewVocab(seed uint64, n int) *Vocab {
	rng := rand.New(rand.NewPCG(seed, 1))
	syl := []string{"ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "va", "de", "zo", "gu", "fa", "bi", "xe", "ly", "or", "an", "el", "um"}
	seen := map[string]bool{}
	words := make([]string, 0, n)
	for len(words) < n {
		var b strings.Builder
		for k := 1 + rng.IntN(4); k >= 0; k-- {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return &Vocab{Words: words, Rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(n-1))}
}

// Text draws words separated by spaces until the text is about n bytes.
func (v *Vocab) Text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.Words[v.zipf.Uint64()])
	}
	return b.String()
}

// Tags draws n words (Zipf-distributed, as Text's).
func (v *Vocab) Tags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = v.Words[v.zipf.Uint64()]
	}
	return tags
}

// TwoWordQueries returns n queries of two mid-frequency words (ranks
// 20-399: not stop words, not hapaxes), the same for the same seed.
func (v *Vocab) TwoWordQueries(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	qs := make([]string, n)
	for i := range qs {
		qs[i] = v.Words[20+rng.IntN(380)] + " " + v.Words[20+rng.IntN(380)]
	}
	return qs
}

// DuckDB runs sql with DuckDB's Node.js client (scripts/duckdb/query.mjs, installed by
// scripts/ensure-duckdb.sh) and returns its rows, one JSON array a line (BIGINT as strings). A
// missing node or DuckDB skips the test, and fails it under CI=true.
func DuckDB(t testing.TB, sql string) string {
	t.Helper()
	mod, err := exec.Command("go", "env", "GOMOD").Output() // the repository's go.mod
	script, node := filepath.Join(filepath.Dir(strings.TrimSpace(string(mod))), "scripts", "duckdb", "query.mjs"), ""
	if err == nil {
		node, err = exec.LookPath("node")
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@duckdb", "node-api"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("DuckDB is required in CI (CI=true): %v; run scripts/ensure-duckdb.sh", err)
		}
		t.Skipf("skipping: DuckDB not installed (scripts/ensure-duckdb.sh): %v", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, script, sql)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb %q: %v\n%s", sql, err, stderr.String())
	}
	return string(out)
}
