package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// pinnedModules are the dependencies whose versions change what trendfetch
// does: `trendfetch version` shows them.
var pinnedModules = []string{"google.golang.org/api", "modernc.org/sqlite", "github.com/redis/go-redis/v9",
	"github.com/robfig/cron/v3", "github.com/prometheus/client_golang", "github.com/spf13/cobra", "github.com/rs/zerolog"}

// versionInfo is what `trendfetch version --json` prints: Revision is the
// VCS commit (null when unknown), Modules each pinned dependency's version
// (mods: "path version" in pinnedModules' order).
type versionInfo struct {
	Version   string            `json:"version"`
	Revision  *string           `json:"revision"`
	GoVersion string            `json:"go_version"`
	Platform  string            `json:"platform"`
	Modules   map[string]string `json:"modules"`
	mods      []string
}

func buildInfo() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Modules: map[string]string{}}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			v.Revision = &s.Value
		}
	}
	for _, p := range pinnedModules {
		if i := slices.IndexFunc(bi.Deps, func(d *debug.Module) bool { return d.Path == p }); i >= 0 {
			d := cmp.Or(bi.Deps[i].Replace, bi.Deps[i])
			v.Modules[p], v.mods = d.Version, append(v.mods, p+" "+d.Version)
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
		RunE:  func(*cobra.Command, []string) error { return versionRun(a.ioStreams, asJSON) },
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: version, revision, go_version, platform, modules")
	return cmd
}

// versionRun prints the version line (versionString), or buildInfo as JSON.
func versionRun(s ioStreams, asJSON bool) error {
	if asJSON {
		return s.printJSON(buildInfo())
	}
	_, err := fmt.Fprintln(s.stdout, versionString())
	return err
}

// versionString is what `version` and `--version` print: "trendfetch
// v1.2.3 (0123456789ab) go1.26.0 linux/amd64", then the pinned modules.
func versionString() string {
	v, rev := buildInfo(), ""
	if v.Revision != nil && len(*v.Revision) >= 12 {
		rev = " (" + (*v.Revision)[:12] + ")"
	}
	return fmt.Sprintf("trendfetch %s%s %s %s\n%s", v.Version, rev, v.GoVersion, v.Platform, strings.Join(v.mods, ", "))
}
