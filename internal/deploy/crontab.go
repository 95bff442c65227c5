package deploy

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// Crontab is what the crontab lines of one configuration need.
type Crontab struct {
	Title    string   // the header's first line
	Comments []string // further header lines (warnings about the environment)
	Args     []string // this trendfetch (absolute) and its flags
	Env      []string // NAME=value settings without a flag, given on each line
	LogDir   string   // the absolute directory of the per-region logs (LogDir/REGION.log)
	TimeZone string   // the schedule's ("" = the system's)
	KeyFile  bool     // the credential reads its key from api_key_file (no advice needed)
	Jobs     []Job    // the regions in stagger order
}

// Block's first and last lines: what the install line replaces in a crontab, keeping the rest.
const (
	BlockBegin = "# BEGIN trendfetch"
	BlockEnd   = "# END trendfetch"
)

// Render writes a block, between BlockBegin and BlockEnd, to append to a crontab: the header
// (how to replace an earlier block) and a line per region, its output appended to
// LogDir/REGION.log. Settings are given on each line, not as NAME=value lines, which would
// apply to every entry below them; CRON_TZ= (cronie has no other way) is why the block goes last.
func (c Crontab) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n# %s\n", BlockBegin, c.Title)
	b.WriteString("# Install as the user owning the database: save this block to FILE, then replace the crontab's earlier\n")
	b.WriteString("# trendfetch block with it (its other entries stay; see `crontab -l`):\n")
	fmt.Fprintf(&b, "#   (crontab -l 2>/dev/null | sed '/^%s$/,/^%s$/d'; cat FILE) | crontab -\n", BlockBegin, BlockEnd)
	fmt.Fprintf(&b, "# Create the log directory first: mkdir -p %s\n", ShellQuote(c.LogDir))
	if !c.KeyFile {
		b.WriteString("# cron has no login environment: give the API key with api_key_file in the config.\n")
	}
	for _, s := range c.Comments {
		fmt.Fprintf(&b, "# %s\n", s)
	}
	fmt.Fprintf(&b, "# Exit codes: %s.\n", exitcode.Summary())
	if c.TimeZone != "" {
		b.WriteString("# The schedule's time zone (cronie honours CRON_TZ; elsewhere set the system zone); it applies to\n# every entry below it: keep this block last.\n")
		fmt.Fprintf(&b, "CRON_TZ=%s\n", c.TimeZone)
	}
	b.WriteString("# m h dom mon dow  command\n")
	for _, j := range c.Jobs {
		fmt.Fprintf(&b, "%-16s %s\n", j.Schedule, c.command(j))
	}
	fmt.Fprintf(&b, "%s\n", BlockEnd)
	_, err := io.WriteString(w, b.String())
	return err
}

// command is region j's crontab command: the settings, trendfetch run, the log redirection.
func (c Crontab) command(j Job) string {
	var words []string
	for _, kv := range c.Env {
		name, value, _ := strings.Cut(kv, "=")
		words = append(words, name+"="+ShellQuote(value))
	}
	for _, a := range append(slices.Clone(c.Args), "run", "--region", j.Region) {
		words = append(words, ShellQuote(a))
	}
	logFile := ShellQuote(filepath.Join(c.LogDir, j.Region+".log"))
	// '%' ends the command in a crontab line unless escaped.
	return strings.ReplaceAll(strings.Join(words, " ")+" >>"+logFile+" 2>&1", "%", `\%`)
}

// ShellQuote quotes s for sh when it holds anything but safe characters.
func ShellQuote(s string) string {
	if isSafe(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isSafe reports whether s is non-empty and needs no quotes (sh, systemd).
func isSafe(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@") == ""
}
