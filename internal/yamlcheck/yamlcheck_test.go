package yamlcheck

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type level string

func (l *level) UnmarshalYAML(n *yaml.Node) error {
	if n.Value != "low" && n.Value != "high" {
		return errors.New("low or high")
	}
	*l = level(n.Value)
	return nil
}

type doc struct {
	Name  string `yaml:"name"`
	Items []struct {
		Count int   `yaml:"count"`
		Level level `yaml:"level"`
	} `yaml:"items"`
	Free   map[string]int `yaml:"free"`
	Hidden string         `yaml:"-"`
}

func TestCheck(t *testing.T) {
	for in, want := range map[string]string{
		"name: x\nfree: {any: 1}\nitems: [{count: 2, level: low}]\n": "",
		"nam: x\n":                   `line 1: unknown key nam: did you mean "name"?`,
		"items:\n  - {cout: 1}\n":    `line 2: unknown key items[0].cout: did you mean "count"?`,
		"zzzzzz: 1\n":                "(valid at the top level: free, items, name)",
		"hidden: x\n":                "unknown key hidden",
		"items: {count: 1}\n":        "line 1: items: want a list",
		"items: [{count: many}]\n":   `items[0].count: want a whole number (got "many")`,
		"items: [{level: medium}]\n": "items[0].level: want low or high",
		"name: [a]\n":                "name: want a single value",
		"free: [a]\n":                "free: want a mapping",
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(in), &n); err != nil {
			t.Fatal(err)
		}
		err := Check(&n, reflect.TypeFor[doc]())
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}
