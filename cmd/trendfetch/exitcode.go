package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/trendfetch/trendfetch/internal/engine"
	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/regions"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// usageError is a mistake in how trendfetch was invoked (exit 2).
type usageError = engine.UsageError

var usagef = engine.Usagef

// signalError is the cancellation cause when a signal stops trendfetch.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "interrupted by " + signalName(e.sig) }

// ExitCode is 128 + the signal's number, as shells report it.
func (e *signalError) ExitCode() int { return signalExit(e.sig) }

// signalName is a signal's conventional name ("SIGTERM").
func signalName(s os.Signal) string { return unix.SignalName(s.(syscall.Signal)) }

// signalExit is the exit code after signal s: 128 + its number.
func signalExit(s os.Signal) int { return 128 + int(s.(syscall.Signal)) }

// exitCode maps an error to the process exit code: the code the error knows
// (exitcode.Of), or 2 for cobra's own usage errors, which are plain errors.
func exitCode(ctx context.Context, err error) int {
	// cobra reports an unknown subcommand and a required flag left out
	// (`quota charge` without --method) with plain errors.
	if err != nil && (strings.HasPrefix(err.Error(), "unknown command ") || strings.HasPrefix(err.Error(), "required flag(s) ")) {
		return exitcode.Usage
	}
	return exitcode.Of(ctx, err)
}

// parseRegion reads --region ("" = every region): a usage error pointing
// at `trendfetch regions` when it is no region.
func parseRegion(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	r, err := regions.Parse(s)
	if err != nil {
		return "", &usageError{Err: err, Hint: "trendfetch regions"}
	}
	return r, nil
}

// openRegionStore reads --region (parseRegion) and opens the read store,
// which the caller closes: the first step of the commands that read.
func openRegionStore(ctx context.Context, e *engine.Engine, region string) (string, *store.Store, error) {
	r, err := parseRegion(region)
	if err != nil {
		return "", nil, err
	}
	st, err := e.OpenStore(ctx, true)
	return r, st, err
}

// is reports whether err's chain holds a T (errors.As).
func is[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// flagValueRE matches pflag's message for a value that does not parse, e.g.
// `invalid argument "abc" for "-n, --limit" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
var flagValueRE = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (?:strconv\.Parse(Int|Uint|Float|Bool)|time: |.*)`)

// flagError rewrites pflag's parse errors to name the flag and the wanted
// form, values clipped; an unknown flag gets the closest known one.
func flagError(c *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if s := termtext.Closest(name, names); s != "" {
			return fmt.Errorf("%s: did you mean --%s?", err, s)
		}
	}
	m := flagValueRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := map[string]string{"Int": "a whole number", "Uint": "a whole number", "Float": "a number", "Bool": "true or false"}[m[3]]
	if strings.Contains(err.Error(), "time: ") || strings.Contains(err.Error(), "want a duration") {
		want = "a duration such as 30s, 2h or 90d"
	}
	return fmt.Errorf("%s %q: want %s", m[2], termtext.Clip(m[1], 80), cmp.Or(want, "a valid value"))
}

// argsAreUsage makes the argument validators of c and its subcommands
// return *usageError: a wrong number of arguments exits 2.
func argsAreUsage(c *cobra.Command) {
	if validate := c.Args; validate != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := validate(cmd, args)
			if err == nil || is[*usageError](err) {
				return err
			}
			return &usageError{Err: err, Hint: cmd.CommandPath() + " --help"}
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}
