package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// Closest returns the candidate nearest to s by edit distance (Levenshtein,
// case-insensitive), or "" when none is within a third of s's length (at
// least 1, at most 3 edits): close enough to be a typo.
func Closest(s string, candidates []string) string {
	best, bestD := "", 1+min(3, max(1, len(s)/3))
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Truncate shortens a value echoed in a message to at most n bytes (on a
// rune boundary), marking the cut with "…(N bytes)": a 50 MB setting or a
// 100 KB query must not flood stderr. Control characters and invalid UTF-8
// are escaped Go-style (a key "a\nb" prints as a\nb), so the message stays
// one line whatever the input.
func Truncate(s string, n int) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// unknownKey walks the YAML document doc against the yaml tags of t and
// returns an error for the first mapping key no field declares: it names
// the key's path and line and suggests the closest valid key. Maps with
// free keys (quota.costs, schedule.regions, ...) are not checked here. It
// returns nil when every key is known.
func unknownKey(doc *yaml.Node, t reflect.Type) error {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	return walkKeys(doc, t, "")
}

func walkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if want, ok := shapeMismatch(n, t); !ok && path != "" {
		return &KeyError{Key: path, Msg: fmt.Sprintf("line %d: %s: want %s", n.Line, Truncate(path, 80), want)}
	}
	switch {
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, item := range n.Content {
			if err := walkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			fields[name] = f.Type
			names = append(names, name)
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("line %d: unknown key %s", k.Line, Truncate(p, 80))
				if s := Closest(k.Value, names); s != "" {
					msg += fmt.Sprintf(": did you mean %q?", s)
				} else {
					where := "at the top level"
					if path != "" {
						where = "under " + path
					}
					msg += fmt.Sprintf(" (valid %s: %s)", where, strings.Join(names, ", "))
				}
				return &KeyError{Key: k.Value, Msg: msg}
			}
			if err := walkKeys(v, ft, p); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// shapeMismatch reports whether node n can decode into t (ok) and, if not,
// what t wants, in words (no Go type names).
func shapeMismatch(n *yaml.Node, t reflect.Type) (want string, ok bool) {
	custom := reflect.PointerTo(t).Implements(unmarshalerType)
	switch {
	case t.Kind() == reflect.Struct && !custom:
		return "a mapping of keys (key: value lines indented below it)", n.Kind == yaml.MappingNode
	case t.Kind() == reflect.Map:
		return "a mapping (key: value lines indented below it)", n.Kind == yaml.MappingNode
	case t.Kind() == reflect.Slice:
		return "a list, e.g. [a, b] or - lines", n.Kind == yaml.SequenceNode
	}
	if n.Kind != yaml.ScalarNode {
		return "a single value", false
	}
	if t == reflect.TypeFor[Duration]() {
		_, err := ParseDuration(n.Value)
		return fmt.Sprintf("a duration such as 90s, 30m or 24h (got %q)", Truncate(n.Value, 40)), err == nil
	}
	if custom {
		return "", true // its own UnmarshalYAML names the value
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var v int64
		return fmt.Sprintf("a whole number (got %q)", Truncate(n.Value, 40)), n.Decode(&v) == nil
	case reflect.Float32, reflect.Float64:
		var v float64
		return fmt.Sprintf("a number (got %q)", Truncate(n.Value, 40)), n.Decode(&v) == nil
	case reflect.Bool:
		var v bool
		return fmt.Sprintf("true or false (got %q)", Truncate(n.Value, 40)), n.Decode(&v) == nil
	}
	return "", true
}

// KeyError is an unknown key in a config file; Msg names its path and line
// and suggests the closest valid key.
type KeyError struct {
	// Key is the unknown key itself; Msg the whole message.
	Key, Msg string
}

func (e *KeyError) Error() string { return e.Msg }

// validateCallSites checks quota.costs and quota.policies against the
// call-site table (package callsite): every key must be a known call site
// (a typo such as search.lst would otherwise be accepted and the real call
// site would fail mid-run, after spending units), and every call site this
// config enables must have a cost.
func (c *Config) validateCallSites() error {
	known := callsite.Names()
	for _, section := range []struct {
		name string
		keys []string
	}{{"quota.costs", sortedKeys(c.Quota.Costs)}, {"quota.policies", sortedKeys(c.Quota.Policies)}} {
		for _, m := range section.keys {
			if _, ok := callsite.Lookup(m); ok {
				continue
			}
			reason := "not a call site trendfetch makes"
			if s := Closest(m, known); s != "" {
				reason += fmt.Sprintf("; did you mean %s?", s)
			}
			return invalid(section.name+"."+Truncate(m, 80), "{...}", "%s (call sites: %s)", reason, strings.Join(known, ", "))
		}
	}
	need := []struct {
		site, why string
		on        bool
	}{
		{callsite.VideosList, "every run fetches the chart", true},
		{callsite.CategoriesList, "categories.enabled is true", c.Categories.Enabled},
		{callsite.ChannelsList, "channels.enabled is true", c.Channels.Enabled},
		{callsite.VideosListRefresh, "store.policy is amended (set store.refresh_per_day: 0 to remove old text without refreshing it)",
			c.Store.Policy == PolicyAmended && c.Store.RefreshPerDay > 0},
	}
	for _, n := range need {
		if _, ok := c.Quota.Costs[n.site]; n.on && !ok {
			return c.noCost(n.site, n.why)
		}
	}
	return nil
}
