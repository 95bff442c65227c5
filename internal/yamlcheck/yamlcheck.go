// Package yamlcheck checks a YAML document against the yaml tags of its Go type: the first unknown
// key or wrongly shaped value is an error naming path and line in words (yaml.v3's name Go types).
package yamlcheck

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/termtext"
)

// Error is the first problem Check found: Key is the unknown key, or the
// path of a value of the wrong shape; Msg starts with "line N: ".
type Error struct {
	Key, Msg string
}

func (e *Error) Error() string { return e.Msg }

// Check walks doc (a document or its root) against t's yaml tags: an *Error for the first key no
// field declares or value that cannot decode into its field. Map keys, aliases, nulls unchecked.
func Check(doc *yaml.Node, t reflect.Type) error {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	return walk(doc, t, "")
}

// walk checks n against t at path ("" the root): its shape, then each item of a list or each
// key of a mapping.
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
		return walkStruct(n, t, path)
	}
	return nil
}

// walkStruct checks each key of mapping n against the yaml tags of struct t, and its value.
func walkStruct(n *yaml.Node, t reflect.Type, path string) error {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" && f.IsExported() {
			fields[name] = f.Type
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := strings.TrimPrefix(path+"."+k.Value, ".")
		ft, ok := fields[k.Value]
		if !ok {
			return unknownKey(k, p, path, slices.Sorted(maps.Keys(fields)))
		}
		if err := walk(v, ft, p); err != nil {
			return err
		}
	}
	return nil
}

// unknownKey is the *Error of key k (at path p, under parent) that no field declares: the
// closest valid name, else every valid name.
func unknownKey(k *yaml.Node, p, parent string, names []string) error {
	msg := fmt.Sprintf("line %d: unknown key %s", k.Line, termtext.Clip(p, 80))
	if s := termtext.Closest(k.Value, names); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else {
		where := "at the top level"
		if parent != "" {
			where = "under " + parent
		}
		msg += fmt.Sprintf(" (valid %s: %s)", where, strings.Join(names, ", "))
	}
	return &Error{Key: k.Value, Msg: msg}
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// shape reports whether node n can decode into t (ok) and, if not, what t wants, in words.
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
	}
	err := n.Decode(reflect.New(t).Interface())
	switch k := t.Kind(); {
	case err == nil:
		return "", true
	case custom:
		return err.Error(), false
	case k >= reflect.Int && k <= reflect.Uint64:
		want = "a whole number"
	case k == reflect.Float32 || k == reflect.Float64:
		want = "a number"
	case k == reflect.Bool:
		want = "true or false"
	default:
		return "", true
	}
	return fmt.Sprintf("%s (got %q)", want, termtext.Clip(n.Value, 40)), false
}
