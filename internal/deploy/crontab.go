package deploy

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// Crontab is what the crontab lines of one configuration need.
type Crontab struct {
	Title    string   // the header's first line
	Comments []string // further header lines (warnings about the environment)
	Args     []string // this trendfetch (absolute) and its flags
	Env      []string // NAME=value settings without a flag
	LogDir   string   // the absolute directory of the per-region logs (LogDir/REGION.log)
	TimeZone string   // the schedule's ("" = the system's)
	Jobs     []Job    // the regions in stagger order
}

// Render writes the header and a crontab line per region, its output appended to LogDir/REGION.log.
func (c Crontab) Render(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.Title)
	b.WriteString("# Install with `crontab -e` as the user owning the database (or pipe into `crontab -`).\n")
	fmt.Fprintf(&b, "# Create the log directory first: mkdir -p %s\n", ShellQuote(c.LogDir))
	b.WriteString("# cron has no login environment: give the API key with api_key_file in the config.\n")
	for _, s := range c.Comments {
		fmt.Fprintf(&b, "# %s\n", s)
	}
	fmt.Fprintf(&b, "# Exit codes: %s.\n", exitcode.Summary())
	for _, kv := range c.Env {
		fmt.Fprintf(&b, "%s\n", kv)
	}
	if c.TimeZone != "" {
		b.WriteString("# The schedule's time zone (cronie honours CRON_TZ; elsewhere set the system zone):\n")
		fmt.Fprintf(&b, "CRON_TZ=%s\n", c.TimeZone)
	}
	b.WriteString("# m h dom mon dow  command\n")
	for _, j := range c.Jobs {
		args := append(append([]string(nil), c.Args...), "run", "--region", j.Region)
		for i := range args {
			args[i] = ShellQuote(args[i])
		}
		logFile := ShellQuote(filepath.Join(c.LogDir, j.Region+".log"))
		// '%' ends the command in a crontab line unless escaped.
		line := strings.ReplaceAll(strings.Join(args, " ")+" >>"+logFile+" 2>&1", "%", `\%`)
		fmt.Fprintf(&b, "%-16s %s\n", j.Schedule, line)
	}
	_, err := io.WriteString(w, b.String())
	return err
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
