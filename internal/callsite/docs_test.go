package callsite_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

var update = flag.Bool("update", false, "rewrite README.md's call-site block from the table")

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readmeBlock renders the README's default buckets, charges and policies
// from the table: the text between the callsite markers is this, and only
// this (`go test ./internal/callsite -run README -update` rewrites it).
func readmeBlock() string {
	var b strings.Builder
	for _, bk := range classicBuckets() {
		var charges []string
		for _, s := range callsite.All() {
			if u, ok := s.Charges[bk.Name]; ok {
				charges = append(charges, fmt.Sprintf("%s %d", s.Name, u))
			}
		}
		window := strings.TrimSuffix(strings.TrimSuffix(bk.Window.String(), "0s"), "0m")
		fmt.Fprintf(&b, "- `%s`: %s per %s; %s\n", bk.Name, termtext.Thousands(bk.Limit), window, strings.Join(charges, ", "))
	}
	policies := map[callsite.Policy][]string{}
	for _, s := range callsite.All() {
		policies[s.Policy] = append(policies[s.Policy], s.Name)
	}
	fmt.Fprintf(&b, "- policies: %s %s; %s %s\n", callsite.FailOpen, strings.Join(policies[callsite.FailOpen], ", "),
		callsite.FailClosed, strings.Join(policies[callsite.FailClosed], ", "))
	return b.String()
}

const (
	beginMark = "<!-- callsite:defaults (generated from internal/callsite: go test ./internal/callsite -run README -update) -->\n"
	endMark   = "<!-- /callsite:defaults -->"
)

// TestREADMEDefaultsFromTable: the README's list of default buckets, their
// charges and the call sites' policies is the table's, so the two cannot
// drift.
func TestREADMEDefaultsFromTable(t *testing.T) {
	path := filepath.Join(repoRoot(t), "README.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i, j := strings.Index(readme, beginMark), strings.Index(readme, endMark)
	if i < 0 || j < i {
		t.Fatalf("README.md has no block %q ... %q", beginMark, endMark)
	}
	got, want := readme[i+len(beginMark):j], readmeBlock()
	if *update {
		if err := os.WriteFile(path, []byte(readme[:i+len(beginMark)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("README.md's call-site block drifted from internal/callsite (run with -update):\n got:\n%s\nwant:\n%s", got, want)
	}
}

// TestExampleConfigQuotaFromTable: configs/trendfetch.example.yaml spells
// out the default buckets, costs and policies; they must be the table's.
func TestExampleConfigQuotaFromTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "configs", "trendfetch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Quota struct {
			Buckets []struct {
				Name     string `yaml:"name"`
				Limit    int64  `yaml:"limit"`
				Window   string `yaml:"window"`
				Calendar bool   `yaml:"calendar"`
			} `yaml:"buckets"`
			Costs    map[string]map[string]int64 `yaml:"costs"`
			Policies map[string]callsite.Policy  `yaml:"policies"`
		} `yaml:"quota"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, b := range doc.Quota.Buckets {
		w, err := time.ParseDuration(b.Window)
		if err != nil {
			t.Fatalf("bucket %s: window %q: %v", b.Name, b.Window, err)
		}
		got = append(got, fmt.Sprintf("bucket %s %d %s %v", b.Name, b.Limit, w, b.Calendar))
	}
	for _, b := range classicBuckets() {
		want = append(want, fmt.Sprintf("bucket %s %d %s %v", b.Name, b.Limit, b.Window, b.Calendar))
	}
	for m, c := range doc.Quota.Costs {
		got = append(got, fmt.Sprintf("cost %s %v", m, c))
	}
	for m, p := range doc.Quota.Policies {
		got = append(got, fmt.Sprintf("policy %s %s", m, p))
	}
	for _, s := range callsite.All() {
		want = append(want, fmt.Sprintf("cost %s %v", s.Name, s.Charges), fmt.Sprintf("policy %s %s", s.Name, s.Policy))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("configs/trendfetch.example.yaml's quota section drifted from internal/callsite:\n got %q\nwant %q", got, want)
	}
}
