package main

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/pgtest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// readmeCommands returns the command paths named in the first column of
// README.md's "## Commands" table ("quota status", "completion bash", ...),
// each with the prefixes it implies ("quota"). A cell names its command in
// its code spans: `trendfetch quota check --method ...` names "quota check",
// `run --all` names "run", and `trendfetch completion bash\|zsh` names both
// "completion bash" and "completion zsh". The words after "trendfetch" are
// followed down the command tree while they name a subcommand; a word where
// the tree expects a subcommand but has none of that name is reported as a
// command that does not exist.
func readmeCommands(t *testing.T, root *cobra.Command) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no ## Commands section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	spanRE := regexp.MustCompile("`([^`]+)`")
	got := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| command ") {
			continue
		}
		rows++
		cell, _, _ := strings.Cut(strings.ReplaceAll(line[2:], `\|`, "\x00"), " | ")
		spans := spanRE.FindAllStringSubmatch(cell, -1)
		if len(spans) == 0 {
			t.Errorf("README command row names no command: %s", line)
			continue
		}
		for i, span := range spans {
			words := strings.Fields(span[1])
			if len(words) > 0 && words[0] == "trendfetch" {
				words = words[1:]
			} else if i == 0 {
				t.Errorf("README command row does not start with `trendfetch ...`: %s", line)
				continue
			}
			for _, path := range commandPaths(root, words) {
				if path == "" {
					t.Errorf("README command row names a command the tree does not have: %s", strings.ReplaceAll(line, "\x00", `\|`))
					continue
				}
				got[path] = true
			}
		}
	}
	if rows == 0 {
		t.Fatal("README.md's ## Commands section has no table rows")
	}
	return got
}

// commandPaths follows words (alternatives separated by NUL, the table's
// escaped "|") down the tree from cmd and returns every command path they
// name, with its prefixes. A word that is not a subcommand of a command
// that has subcommands yields "" (no such command); on a command without
// subcommands, words are its arguments and flags.
func commandPaths(cmd *cobra.Command, words []string) []string {
	if len(words) == 0 || strings.HasPrefix(words[0], "-") || !cmd.HasSubCommands() {
		return nil
	}
	var out []string
	for _, name := range strings.Split(words[0], "\x00") {
		sub := subcommand(cmd, name)
		if sub == nil {
			if cmd.HasParent() && !isCommandWord(name) {
				continue // an argument such as QUERY or ID
			}
			out = append(out, "")
			continue
		}
		path := strings.TrimPrefix(sub.CommandPath(), "trendfetch ")
		out = append(out, path)
		out = append(out, commandPaths(sub, words[1:])...)
	}
	return out
}

// isCommandWord reports whether w could be a command's name (lower case
// letters and dashes), as opposed to an argument placeholder or a value.
func isCommandWord(w string) bool {
	return regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w)
}

func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// treeCommands is every command path `--help` lists, recursively: the
// available commands and cobra's help and completion commands (added at
// Execute, so added here the same way), without the root.
func treeCommands(root *cobra.Command) map[string]bool {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	out := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() && sub.Name() != "help" {
				continue
			}
			out[strings.TrimPrefix(sub.CommandPath(), "trendfetch ")] = true
			walk(sub)
		}
	}
	walk(root)
	return out
}

// TestREADMECommandsTableIsTheTree: README.md's commands table names every
// command and subcommand of the command tree (what `trendfetch --help` and
// each group's --help list), and no command the tree does not have.
func TestREADMECommandsTableIsTheTree(t *testing.T) {
	root := newRootCmd(&app{ioStreams: ioStreams{stdout: io.Discard, stderr: io.Discard}, lookupEnv: os.LookupEnv})
	tree := treeCommands(root)
	if !tree["quota status"] || !tree["lease release"] || !tree["completion bash"] {
		t.Fatalf("the command tree lacks commands it is known to have: %v", tree)
	}
	table := readmeCommands(t, root)
	var missing, extra []string
	for path := range tree {
		if !table[path] {
			missing = append(missing, path)
		}
	}
	for path := range table {
		if !tree[path] {
			extra = append(extra, path)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("README.md's commands table lacks %q (add a row for each)", missing)
	}
	if len(extra) > 0 {
		t.Errorf("README.md's commands table names %q, which `trendfetch --help` does not list", extra)
	}
}

// readmeSection returns the body of README.md's section "## title", up to
// the next "## " heading.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// readmeSQL returns the fenced ```sql blocks of README.md's several-hosts
// section that use the psql variable name (:'name'), in order.
func readmeSQL(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, block := range regexp.MustCompile("(?s)\n```sql\n(.*?)\n```\n").FindAllStringSubmatch(readmeSection(t, "Several hosts, one dataset"), -1) {
		if strings.Contains(block[1], ":'"+name+"'") {
			out = append(out, block[1])
		}
	}
	return out
}

// readmeCommandLines returns the trendfetch command lines of the README's
// several-hosts walkthrough, its commands' and the crontab lines it shows:
// the words after a word naming the binary (trendfetch,
// /usr/local/bin/trendfetch), up to a shell operator (|, >, >>, &).
func readmeCommandLines(t *testing.T) [][]string {
	blocks, _ := walkthrough(t)
	var texts []string
	for _, b := range blocks {
		for _, c := range b.cmds {
			first, _, _ := strings.Cut(c.text, "\n") // not a heredoc's lines
			texts = append(texts, first)
			for _, line := range c.want {
				if strings.Contains(line, "/bin/trendfetch ") {
					texts = append(texts, line)
				}
			}
		}
	}
	var out [][]string
	for _, text := range texts {
		words := strings.Fields(text)
		i := slices.IndexFunc(words, func(w string) bool { return w == "trendfetch" || strings.HasSuffix(w, "/bin/trendfetch") })
		if i < 0 {
			continue
		}
		words = words[i+1:]
		if j := slices.IndexFunc(words, func(w string) bool { return strings.ContainsAny(w[:1], "|>&") || w == "2>&1" }); j >= 0 {
			words = words[:j]
		}
		out = append(out, words)
	}
	return out
}

// TestREADMESeveralHostsCommandLines: every trendfetch command line of the
// README's several-hosts walkthrough names a command of the tree, with
// flags that command has (TestREADMEWalkthrough runs them; this runs
// under -short).
func TestREADMESeveralHostsCommandLines(t *testing.T) {
	lines := readmeCommandLines(t)
	if len(lines) < 5 {
		t.Fatalf("the walkthrough has %d trendfetch command lines, want copy, crontab, its lines, serve and coverage", len(lines))
	}
	for _, words := range lines {
		root := newRootCmd(&app{ioStreams: ioStreams{stdout: io.Discard, stderr: io.Discard}, lookupEnv: os.LookupEnv})
		cmd, rest, err := root.Find(words)
		if err == nil && cmd == root {
			err = errors.New("names no command")
		}
		if err == nil {
			err = cmd.ParseFlags(rest)
		}
		if err != nil {
			t.Errorf("README: trendfetch %s: %v", strings.Join(words, " "), err)
		}
	}
}

// TestREADMEAnalystQueries: the README's two psql queries, run by Debian's
// psql on a PostgreSQL dataset that trendfetch filled with five replayed
// days of the recorded 2017 US and GB charts (each run's captures then
// moved to a day of its own, as if the runs had been a day apart): a
// region's top videos by days on its chart are those of the recorded
// charts, with their days and best rank; a video's views over time are
// those `trendfetch video --json` shows, its chart points and the samples
// taken after it left the chart, oldest first, the views growing.
func TestREADMEAnalystQueries(t *testing.T) {
	top, views := readmeSQL(t, "region"), readmeSQL(t, "video")
	if len(top) != 1 || len(views) != 1 {
		t.Fatalf("README: %d sql blocks with :'region' and %d with :'video', want one each", len(top), len(views))
	}
	srv, db := pgDatabase(t)
	psql := func(sql string, vars ...string) [][]string {
		t.Helper()
		f := filepath.Join(t.TempDir(), "q.sql")
		if err := os.WriteFile(f, []byte(sql), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"--csv", "-f", f}
		for _, v := range vars {
			args = append(args, "-v", v)
		}
		out, err := srv.Psql(db, args...)
		if errors.Is(err, pgtest.ErrNotInstalled) {
			pgtest.Require(t, nil, err)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) == 0 {
			t.Fatalf("psql --csv: %v\n%s", err, out)
		}
		return rows[1:]
	}

	data := youtubetest.DataDir(t)
	emu := youtubetest.New()
	var dates []string // US's first five (GB has fewer: its last one is served again)
	for _, r := range []string{"GB", "US"} {
		_, d, err := emu.LoadDaysFile(filepath.Join(data, "kaggle_youtube_new_2017", r+"videos.csv"))
		if err != nil || len(d) < 5 && r == "US" {
			t.Fatalf("%s: %d days, %v", r, len(d), err)
		}
		dates = d[:min(5, len(d))]
	}
	url := emu.StartTest(t)
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	e.vars["TRENDFETCH_DATABASE"] = db
	start := time.Now().UTC()
	type stat struct{ days, best int }
	want := map[string]*stat{} // US, from the recorded charts
	for i, date := range dates {
		if err := emu.SetDate(date); err != nil {
			t.Fatal(err)
		}
		for rank, v := range emu.Chart("US") {
			s := want[v.Id]
			if s == nil {
				s = &stat{best: rank + 1}
				want[v.Id] = s
			}
			s.days++
			s.best = min(s.best, rank+1)
		}
		if res := e.run("--api-endpoint", url, "run", "--region", "US", "--region", "GB"); res.code != 0 {
			t.Fatalf("run of %s: exit %d\n%s", date, res.code, res.stderr)
		}
		day := start.AddDate(0, 0, i+1-len(dates)).Format(time.DateOnly)
		since := start.Format("2006-01-02T15:04:05")
		psql(`UPDATE captures SET captured_at = :'day' || substr(captured_at, 11) WHERE captured_at >= :'since';
UPDATE stats_samples SET sampled_at = :'day' || substr(sampled_at, 11) WHERE sampled_at >= :'since';`, "day="+day, "since="+since)
	}

	rows := psql(top[0], "region=US")
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(cmp.Compare(want[b].days, want[a].days), cmp.Compare(want[a].best, want[b].best), cmp.Compare(a, b))
	})
	if len(rows) < 10 || len(rows) > len(ids) {
		t.Fatalf("top videos: %d rows, want 10 to %d", len(rows), len(ids))
	}
	for i, r := range rows {
		w := fmt.Sprintf("%s %d %d", ids[i], want[ids[i]].days, want[ids[i]].best)
		if len(r) != 4 || r[0]+" "+r[2]+" "+r[3] != w || r[1] == "" {
			t.Errorf("top videos row %d = %q, want id, title, days, best rank %s", i+1, r, w)
		}
	}
	if want[ids[0]].days != len(dates) {
		t.Errorf("the top video was on the chart %d days, want all %d", want[ids[0]].days, len(dates))
	}

	var sampled []string
	for _, r := range psql("SELECT DISTINCT v.id FROM stats_samples s JOIN videos v ON v.rowid = s.video ORDER BY 1 LIMIT 1") {
		sampled = append(sampled, r[0])
	}
	if len(sampled) == 0 {
		t.Fatal("no video was sampled after leaving a chart")
	}
	for _, id := range []string{ids[0], sampled[0]} {
		rows := psql(views[0], "video="+id)
		res := e.run("video", id, "--json")
		var h store.VideoHistory
		if err := json.Unmarshal([]byte(res.stdout), &h); err != nil || res.code != 0 {
			t.Fatalf("video %s --json: exit %d, %v\n%s", id, res.code, err, res.stderr)
		}
		var got, wantPoints []string
		var last int64 = -1
		for _, r := range rows {
			at, err := time.Parse("2006-01-02 15:04:05.999999-07", r[0])
			if err != nil || len(r) != 4 {
				t.Fatalf("views of %s: row %q: %v", id, r, err)
			}
			got = append(got, at.UTC().Format(time.RFC3339Nano)+" "+r[1]+" "+r[3])
			n, err := strconv.ParseInt(r[3], 10, 64)
			if err != nil || n < last {
				t.Errorf("views of %s: %q after %d views: want a count, growing", id, r, last)
			}
			last = n
		}
		for _, p := range h.Points {
			wantPoints = append(wantPoints, fmt.Sprintf("%s %s %d", p.At.UTC().Format(time.RFC3339Nano), p.Region, *p.Views))
		}
		if !slices.Equal(got, wantPoints) || len(got) < 2 {
			t.Errorf("views of %s (at, region, views):\n%s\nwant, as trendfetch video --json shows them:\n%s", id, strings.Join(got, "\n"), strings.Join(wantPoints, "\n"))
		}
	}
}

// TestPackageListsAreTheTree (issue 38 item 8): README's Layout and
// docs/design.md §2 name every package directory of cmd/ and internal/.
func TestPackageListsAreTheTree(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	design, err := os.ReadFile(filepath.Join("..", "..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, _ := strings.Cut(string(readme), "\n## Layout\n")
	layout, _, _ = strings.Cut(layout, "\n## ")
	_, arch, _ := strings.Cut(string(design), "\n## 2. Architecture\n")
	arch, _, _ = strings.Cut(arch, "\n## ")
	for _, parent := range []string{"cmd", "internal"} {
		entries, err := os.ReadDir(filepath.Join("..", "..", parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			name := parent + "/" + e.Name()
			if !regexp.MustCompile(`(?m)^\s*` + name + `\s`).MatchString(layout) {
				t.Errorf("README's Layout does not list %s", name)
			}
			if !regexp.MustCompile(`(?m)^` + name + `\s|^internal/(.*[ ,])?` + e.Name() + `(,|$)`).MatchString(arch) {
				t.Errorf("docs/design.md §2 does not list %s", name)
			}
		}
	}
}
