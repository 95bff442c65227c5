package main

import (
	"strings"
	"testing"
)

// TestCrontabHelpShowsOneDefault: each flag of `crontab --help` states its default once (the
// configuration's), never also the flag type's zero value.
func TestCrontabHelpShowsOneDefault(t *testing.T) {
	for _, line := range strings.Split(newCrontabCmd(&app{}).Flags().FlagUsages(), "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("two defaults: %s", strings.TrimSpace(line))
		}
	}
}
