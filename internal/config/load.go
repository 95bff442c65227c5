package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/yamlcheck"
)

// MaxConfigBytes bounds a config file (1 MiB): larger ones are refused.
const MaxConfigBytes = 1 << 20

// Load reads the defaults, the config file (--config, else $TRENDFETCH_CONFIG: both must exist;
// else the XDG default if it exists), the environment (lookup), the flags (Setting.Flag -> value,
// "" = not given), and completes. It returns the config and the absolute path of the file read
// ("" = none); errors name the file. The caller validates.
func Load(lookup func(string) (string, bool), flags map[string]string) (*Config, string, error) {
	row := Lookup("")
	env, _ := lookup(row.Env)
	path, explicit := cmp.Or(flags[row.Flag], env), true
	if path == "" {
		if path, explicit = xdgDir("XDG_CONFIG_HOME", ".config"), false; path != "" {
			path = filepath.Join(path, "config.yaml")
		}
	}
	var r io.Reader
	fi, err := os.Stat(path) // first: opening a FIFO would block
	switch {
	case errors.Is(err, os.ErrNotExist) && !explicit:
		path = "" // no config file: defaults
	case err != nil:
		return nil, "", fmt.Errorf("cannot open config: %w", err)
	case fi.IsDir():
		return nil, "", fmt.Errorf("config %s is a directory, want a YAML file", path)
	case !fi.Mode().IsRegular():
		return nil, "", fmt.Errorf("config %s is not a regular file (%s), want a YAML file", path, fi.Mode().Type())
	default:
		f, err := os.Open(path)
		if err != nil {
			return nil, "", fmt.Errorf("cannot open config: %w", err)
		}
		defer f.Close()
		r = f
		if path, err = filepath.Abs(path); err != nil {
			return nil, "", fmt.Errorf("config %s: %w", path, err)
		}
	}
	cfg, err := read(r, lookup, flags)
	if err != nil && path != "" {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return cfg, path, err
}

// read is Load after the file is found (r; nil = none).
func read(r io.Reader, lookup func(string) (string, bool), flags map[string]string) (*Config, error) {
	cfg := defaults()
	if r != nil {
		if err := cfg.decode(r); err != nil {
			return nil, err
		}
	}
	if err := cfg.readSecrets(lookup, cfg.apply(lookup, flags)); err != nil {
		return nil, err
	}
	cfg.complete()
	return cfg, nil
}

// decode reads YAML from r over c (the defaults); errors name key and line (yamlcheck).
// quota.buckets merge into the preset's, quota.costs replace them, quota.policies override.
func (c *Config) decode(r io.Reader) error {
	raw, doc, err := readYAML(r)
	if err != nil || len(doc.Content) == 0 {
		return err
	}
	if err := yamlcheck.Check(doc, reflect.TypeOf(Config{})); err != nil {
		return fmt.Errorf("config: %s%s", err, secretHint(err))
	}
	// The preset is the base the file's buckets and costs change.
	var head struct {
		Quota struct {
			Preset   string
			Headroom int
			Costs    yaml.Node
		}
	}
	if err := doc.Decode(&head); err != nil {
		return fmt.Errorf("config: %s", oneLine(err))
	}
	if err := c.Quota.setPreset(head.Quota.Preset, head.Quota.Headroom); err != nil {
		return err
	}
	costsGiven := head.Quota.Costs.Kind != 0
	if costsGiven {
		c.Quota.Costs = nil
	}
	defaultPolicies := c.Quota.Policies
	c.Quota.Policies = map[string]callsite.Policy{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config: %s", oneLine(err))
	}
	c.Quota.mergePreset(costsGiven, defaultPolicies)
	return nil
}

// readYAML reads at most MaxConfigBytes of YAML from r: the bytes and the parsed document.
func readYAML(r io.Reader) ([]byte, *yaml.Node, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read config: %w", err)
	}
	if len(raw) > MaxConfigBytes {
		return nil, nil, fmt.Errorf("config is larger than %d KiB: a trendfetch config is a few KB; check the file", MaxConfigBytes>>10)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("config is not valid YAML: %s", oneLine(err))
	}
	return raw, &doc, nil
}

// secretHint is what follows yamlcheck's error when its unknown key is a secret's name
// (api_key, password, url): where secrets are read from; "" otherwise.
func secretHint(err error) string {
	ke, ok := err.(*yamlcheck.Error)
	if !ok || (ke.Key != "api_key" && ke.Key != "password" && ke.Key != "url") {
		return ""
	}
	where := []string{"api_key_env / api_key_file"}
	for _, s := range settings {
		if s.Secret != "" {
			where = append(where, s.Env+" / "+s.Secret)
		}
	}
	return " (secrets are read only from the environment or a file: use " + strings.Join(where, ", ") + ")"
}

// mergePreset completes the file's quota over the preset's: without quota.costs in the file
// (costsGiven false), a preset cost charging a bucket the file removed goes (that call site is
// then off); a method with a cost and no policy in the file keeps its default.
func (q *Quota) mergePreset(costsGiven bool, defaultPolicies map[string]callsite.Policy) {
	for m, per := range q.Costs {
		for b := range per {
			if !costsGiven && !slices.Contains(q.Buckets.names(), b) {
				delete(q.Costs, m)
				break
			}
		}
	}
	for m, p := range defaultPolicies {
		_, has := q.Costs[m]
		if _, set := q.Policies[m]; has && !set {
			q.Policies[m] = p
		}
	}
}

// xdgDir is $env/trendfetch, else ~/home.../trendfetch, else "" (never the cwd).
func xdgDir(env string, home ...string) string {
	if d := os.Getenv(env); d != "" {
		return filepath.Join(d, "trendfetch")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(append(append([]string{h}, home...), "trendfetch")...)
	}
	return ""
}

func oneLine(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	return strings.Join(strings.Fields(s), " ")
}
