// Package yamlcheck checks a YAML document against the yaml tags of the Go
// type it is decoded into, before decoding: the first key no field
// declares, or a value of the wrong shape, is an error naming the key's
// path and line, in words (no Go type names), with the closest valid key
// suggested. yaml.v3's own errors name Go types and no path.
package yamlcheck

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Error is the first problem Check found. Key is the unknown key itself
// (for an unknown key) or the path of a value of the wrong shape; Msg is the
// whole message, starting with "line N: ".
type Error struct {
	Key, Msg string
}

func (e *Error) Error() string { return e.Msg }

// Check walks doc (a document or its root node) against the yaml tags of t
// and returns an *Error for the first mapping key no field declares, or the
// first value that cannot decode into its field: a mapping for a struct or
// a map, a list for a slice, a scalar of the right kind for a number or a
// bool; a type with its own UnmarshalYAML is asked, and its error is what
// it wants. Maps have free keys; aliases and nulls are not checked. It
// returns nil when every key is known.
func Check(doc *yaml.Node, t reflect.Type) error {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	return walk(doc, t, "")
}

func walk(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if want, ok := shape(n, t); !ok && path != "" {
		return &Error{Key: path, Msg: fmt.Sprintf("line %d: %s: want %s", n.Line, termtext.Clip(path, 80), want)}
	}
	switch {
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, item := range n.Content {
			if err := walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name != "" && name != "-" && f.IsExported() {
				fields[name] = f.Type
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(path+"."+k.Value, ".")
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("line %d: unknown key %s", k.Line, termtext.Clip(p, 80))
				if s := termtext.Closest(k.Value, names); s != "" {
					msg += fmt.Sprintf(": did you mean %q?", s)
				} else {
					where := "at the top level"
					if path != "" {
						where = "under " + path
					}
					msg += fmt.Sprintf(" (valid %s: %s)", where, strings.Join(names, ", "))
				}
				return &Error{Key: k.Value, Msg: msg}
			}
			if err := walk(v, ft, p); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// shape reports whether node n can decode into t (ok) and, if not, what t
// wants, in words.
func shape(n *yaml.Node, t reflect.Type) (want string, ok bool) {
	custom := reflect.PointerTo(t).Implements(unmarshaler)
	switch {
	case t.Kind() == reflect.Struct && !custom:
		return "a mapping of keys (key: value lines indented below it)", n.Kind == yaml.MappingNode
	case t.Kind() == reflect.Map:
		return "a mapping (key: value lines indented below it)", n.Kind == yaml.MappingNode
	case t.Kind() == reflect.Slice:
		return "a list, e.g. [a, b] or - lines", n.Kind == yaml.SequenceNode
	case n.Kind != yaml.ScalarNode:
		return "a single value", false
	case custom:
		if err := reflect.New(t).Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			return err.Error(), false
		}
		return "", true
	}
	got := fmt.Sprintf(" (got %q)", termtext.Clip(n.Value, 40))
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var v int64
		return "a whole number" + got, n.Decode(&v) == nil
	case reflect.Float32, reflect.Float64:
		var v float64
		return "a number" + got, n.Decode(&v) == nil
	case reflect.Bool:
		var v bool
		return "true or false" + got, n.Decode(&v) == nil
	}
	return "", true
}
