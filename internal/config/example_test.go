package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestExampleConfigDocumentsEveryKey: configs/trendfetch.example.yaml
// claims every key; each yaml key of Config (nested structs and the items
// of lists of structs; maps have free keys) appears in it, as a key or
// commented out ("# key: value") in the comments of its section.
func TestExampleConfigDocumentsEveryKey(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "trendfetch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	paths := yamlKeyPaths(reflect.TypeOf(Config{}), nil)
	if len(paths) < 50 {
		t.Fatalf("found only %d keys in Config: the walk is broken", len(paths))
	}
	for _, p := range paths {
		if !documented(doc.Content[0], lines, p) {
			t.Errorf("configs/trendfetch.example.yaml does not document %s", strings.Join(p, "."))
		}
	}
}

// yamlKeyPaths returns the key paths of struct type t under prefix: a
// struct field descends, a list of structs descends into "[]", anything
// else (scalars, maps, lists of scalars) is a leaf.
func yamlKeyPaths(t reflect.Type, prefix []string) [][]string {
	var out [][]string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		p := append(append([]string(nil), prefix...), name)
		out = append(out, p)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, yamlKeyPaths(ft, p)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, yamlKeyPaths(ft.Elem(), append(p, "[]"))...)
		}
	}
	return out
}

// documented reports whether path is a key of the document under node, or
// is written commented out ("# leaf:" or "# - leaf:") in the section of
// the deepest key of path that is present (its comments above it
// included); a key below a section that is absent is not documented.
func documented(node *yaml.Node, lines []string, path []string) bool {
	leaf := path[len(path)-1]
	var section *yaml.Node // the deepest key node found
	for _, k := range path {
		if k == "[]" { // the first item of a list, if it has one
			if node.Kind != yaml.SequenceNode || len(node.Content) == 0 {
				return commentedIn(lines, section, leaf)
			}
			node = node.Content[0]
			continue
		}
		var next *yaml.Node
		if node.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == k {
					section, next = node.Content[i], node.Content[i+1]
				}
			}
		}
		if next == nil {
			return (section != nil || len(path) == 1) && commentedIn(lines, section, leaf)
		}
		node = next
	}
	return true
}

// commentedIn reports whether "# leaf:" appears in the lines of key's
// section: the comment block right above it, its own line and every line
// below it up to the next line (not a comment) at its indentation or less.
// key nil is the whole file.
func commentedIn(lines []string, key *yaml.Node, leaf string) bool {
	re := regexp.MustCompile(`^\s*#\s*(-\s+)?` + regexp.QuoteMeta(leaf) + `:`)
	start, end := 0, len(lines)
	if key != nil {
		start = key.Line - 1
		for start > 0 && strings.HasPrefix(strings.TrimSpace(lines[start-1]), "#") {
			start--
		}
		indent := key.Column - 1
		for i := key.Line; i < len(lines); i++ {
			tr := strings.TrimSpace(lines[i])
			if tr != "" && !strings.HasPrefix(tr, "#") && len(lines[i])-len(strings.TrimLeft(lines[i], " ")) <= indent {
				end = i
				break
			}
		}
	}
	for _, l := range lines[start:end] {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}
