package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
	root := newRootCmd(&app{stdout: io.Discard, stderr: io.Discard, lookupEnv: os.LookupEnv})
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
