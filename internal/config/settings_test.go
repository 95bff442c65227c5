package config

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestSettingsTable: every row names a field, its env variable and flag
// are unique, and each source sets the field, flags over the environment
// over the file.
func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings() {
		for _, name := range []string{"key " + s.Key, "env " + s.Env, "flag " + s.Flag} {
			if seen[name] && !strings.HasSuffix(name, " ") {
				t.Errorf("%s in two rows", name)
			}
			seen[name] = true
		}
		if !strings.HasPrefix(s.Env, "TRENDFETCH_") {
			t.Errorf("%q: env %q, want TRENDFETCH_*", s.Key, s.Env)
		}
		if s.Key == "" {
			continue
		}
		c, err := read(nil, envOf(map[string]string{s.Env: "from-env"}), nil)
		if err != nil {
			t.Fatalf("%s: %v", s.Key, err)
		}
		if got := s.Value(c); !strings.HasPrefix(got, "from-env") {
			t.Errorf("%s = %q with %s set, want from-env", s.Key, got, s.Env)
		}
		if s.Flag == "" {
			continue
		}
		c, err = read(nil, envOf(map[string]string{s.Env: "from-env"}), map[string]string{s.Flag: "from-flag"})
		if err != nil || !strings.HasPrefix(s.Value(c), "from-flag") {
			t.Errorf("%s = %q with --%s given, want from-flag (%v)", s.Key, s.Value(c), s.Flag, err)
		}
	}
}

// TestExampleConfigNamesEachVariableAndFlag: the example config names each
// row's environment variable and flag in the comments right above its key
// (a secret's above the file setting that replaces it; --config's in the
// header).
func TestExampleConfigNamesEachVariableAndFlag(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "trendfetch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for _, s := range Settings() {
		key := cmp.Or(s.Secret, s.Key)
		line := 0 // the header, above the first key
		for n, k := doc.Content[0], strings.Split(key, "."); key != "" && len(k) > 0; k = k[1:] {
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k[0] {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
			if next == nil {
				t.Fatalf("no key %s in the example", key)
			}
			n = next
		}
		block := []string{}
		for i := line - 1; i >= 0 && (i == line-1 || strings.HasPrefix(strings.TrimSpace(lines[i]), "#")); i-- {
			block = append(block, lines[i])
		}
		if key == "" { // the header
			for i := 0; strings.HasPrefix(lines[i], "#"); i++ {
				block = append(block, lines[i])
			}
		}
		text := strings.Join(block, "\n")
		if !strings.Contains(text, s.Env) || s.Flag != "" && !strings.Contains(text, "--"+s.Flag) {
			t.Errorf("the comments above %s do not name %s and --%s:\n%s", cmp.Or(key, "the first key"), s.Env, s.Flag, text)
		}
	}
}

// TestPrecedence: for each row of the settings table, flags over the environment over the file,
// a *_file key (the row's Secret; store.url_file for database) being the file's value; the
// file's database beside store.url_file is refused naming both.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	for _, s := range Settings() {
		fileKey, value := cmp.Or(s.Secret, s.Key), "from-file"
		if s.Key == "" {
			continue
		} else if s.Key == "database" {
			fileKey, value = "store.url_file", "postgres://from-file/db"
		}
		yamlValue := value
		if s.List {
			yamlValue = "[" + value + "]"
		}
		if fileKey != s.Key {
			yamlValue = filepath.Join(dir, s.Key)
			if err := os.WriteFile(yamlValue, []byte(value+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		doc := nestedYAML(fileKey, yamlValue)
		for _, c := range []struct{ env, flag, want string }{{"", "", value}, {"from-env", "", "from-env"}, {"from-env", "from-flag", "from-flag"}} {
			if c.flag != "" && s.Flag == "" {
				continue
			}
			cfg, err := read(strings.NewReader(doc), envOf(map[string]string{s.Env: c.env}), map[string]string{s.Flag: c.flag})
			if err != nil || !strings.HasPrefix(s.Value(cfg), c.want) {
				t.Errorf("%s with %s in the file, %s=%q, --%s=%q: %v, want %s", s.Key, fileKey, s.Env, c.env, s.Flag, c.flag, err, c.want)
			}
		}
	}
	f := filepath.Join(dir, "database")
	_, err := parse(strings.NewReader("database: /var/lib/x.db\n" + nestedYAML("store.url_file", f)))
	if err == nil || !strings.Contains(err.Error(), "store.url_file") || !strings.Contains(err.Error(), "database") {
		t.Errorf("database and store.url_file in one file: %v, want an error naming both", err)
	}
}

// nestedYAML is the YAML document setting the dotted key to value.
func nestedYAML(key, value string) string {
	var b strings.Builder
	for i, k := range strings.Split(key, ".") {
		b.WriteString("\n" + strings.Repeat("  ", i) + k + ":")
	}
	return b.String() + " " + value + "\n"
}
