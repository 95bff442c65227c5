package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// pinnedModules are the dependencies whose versions change what trendfetch
// does (the API client, SQLite, Redis, cron, metrics, the CLI): their
// versions are part of `trendfetch version`.
var pinnedModules = []string{
	"google.golang.org/api",
	"modernc.org/sqlite",
	"github.com/redis/go-redis/v9",
	"github.com/robfig/cron/v3",
	"github.com/prometheus/client_golang",
	"github.com/spf13/cobra",
	"github.com/rs/zerolog",
}

// versionInfo is what `trendfetch version --json` prints.
type versionInfo struct {
	Version string `json:"version"`
	// Revision is the VCS commit built (null when unknown).
	Revision  *string `json:"revision"`
	GoVersion string  `json:"go_version"`
	Platform  string  `json:"platform"`
	// Modules maps each pinned dependency linked in to its version.
	Modules map[string]string `json:"modules"`
}

// buildInfo reads the build's version, Go version and pinned module
// versions (runtime/debug.ReadBuildInfo).
func buildInfo() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Modules: map[string]string{}}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			rev := s.Value
			v.Revision = &rev
		}
	}
	for _, d := range bi.Deps {
		for _, p := range pinnedModules {
			if d.Path == p {
				if d.Replace != nil {
					d = d.Replace
				}
				v.Modules[p] = d.Version
			}
		}
	}
	return v
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version, the Go version and the versions of the pinned dependencies",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if asJSON {
				return a.printJSON(buildInfo())
			}
			_, err := fmt.Fprintln(a.stdout, versionString())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: version, revision, go_version, platform, modules")
	return cmd
}

// versionString is what `trendfetch version` and `trendfetch --version`
// print: "trendfetch v1.2.3 (0123456789ab) go1.26.0 linux/amd64" and a
// second line with the pinned modules' versions.
func versionString() string {
	v := buildInfo()
	rev := ""
	if v.Revision != nil && len(*v.Revision) >= 12 {
		rev = " (" + (*v.Revision)[:12] + ")"
	}
	var mods []string
	for _, p := range pinnedModules {
		if ver, ok := v.Modules[p]; ok {
			mods = append(mods, p+" "+ver)
		}
	}
	return fmt.Sprintf("trendfetch %s%s %s %s\n%s", v.Version, rev, v.GoVersion, v.Platform, strings.Join(mods, ", "))
}

// printJSON writes v to stdout as indented JSON (the --json output of
// every command).
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
