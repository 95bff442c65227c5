// Package exitcode is the table of exit codes (docs/design.md §5) that --help and the schedules
// render, and the rule that maps an error to its code (Of): an error knows its code (Coder).
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The exit codes.
const (
	OK       = 0
	Error    = 1
	Usage    = 2
	Running  = 3
	NotFound = 4
	TempFail = 75  // EX_TEMPFAIL of sysexits.h
	SIGHUP   = 129 // 128 + the signal's number, as shells report it
	SIGINT   = 130
	SIGTERM  = 143
)

// Code is an exit code, its Meaning and crontab's few words (Short; "" = unlisted: cron sends no signal).
type Code struct {
	Code           int
	Short, Meaning string
}

// Codes lists every exit code in order.
var Codes = []Code{
	{OK, "ok", "success"},
	{Error, "error", "unexpected error (API failure, database or disk error); what was stored is kept"},
	{Usage, "configuration error", "usage or configuration error (bad flag, config, region, query, duration, missing or rejected API key, a Redis user without the permissions trendfetch needs); a plan that does not fit"},
	{Running, "region already running", "the region is already being run by another process (its run lease is held); nothing done"},
	{NotFound, "not found", "not found: the video, capture or run asked for is not in the database, or no database yet (nothing recorded)"},
	{TempFail, "quota denied (the next tick resumes)", "stopped cleanly: quota denied or limiter unavailable for a fail-closed call site (EX_TEMPFAIL); the run record says why and when to retry"},
	{SIGHUP, "", "hung up by SIGHUP (run recorded as interrupted)"},
	{SIGINT, "", "interrupted by SIGINT (run recorded as interrupted)"},
	{SIGTERM, "", "terminated by SIGTERM (run recorded as interrupted)"},
}

// NotFailures are a scheduled run's exit codes that are no failure (the next tick resumes).
var NotFailures = []int{TempFail, Running}

// NotRetried are the exit codes a retry cannot fix.
var NotRetried = []int{Usage, Running, TempFail}

// Help is the "Exit codes:" section of --help: each code and its Meaning.
func Help() string {
	s := "Exit codes:"
	for _, c := range Codes {
		s += fmt.Sprintf("\n  %-4d %s", c.Code, c.Meaning)
	}
	return s
}

// Summary lists the codes that have a Short meaning: "0 ok, 1 error, ...".
func Summary() string {
	var parts []string
	for _, c := range Codes {
		if c.Short != "" {
			parts = append(parts, fmt.Sprintf("%d %s", c.Code, c.Short))
		}
	}
	return strings.Join(parts, ", ")
}

// Join lists codes for a sentence: "2, 3 and 75".
func Join(codes []int) string {
	s := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(codes)), ", "), "[]")
	if i := strings.LastIndex(s, ", "); i >= 0 {
		s = s[:i] + " and " + s[i+2:]
	}
	return s
}

// Coder is an error that knows the exit code it ends trendfetch with. The CLI's exit status and
// a run's check-in both read it through Of.
type Coder interface {
	error
	ExitCode() int
}

// Of returns the exit code of err ending work under ctx: OK for nil; the code of ctx's
// cancellation cause when that cause is a Coder (a signal wins over the error it caused); the
// code of the first Coder in err's chain (errors.As); Error otherwise.
func Of(ctx context.Context, err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(context.Cause(ctx), &c) || errors.As(err, &c) {
		return c.ExitCode()
	}
	return Error
}

// New returns an error with text msg that exits with code: a sentinel for errors.Is.
func New(code int, msg string) error { return &sentinel{msg: msg, code: code} }

// sentinel is New's error.
type sentinel struct {
	msg  string
	code int
}

func (e *sentinel) Error() string { return e.msg }

// ExitCode is the code given to New.
func (e *sentinel) ExitCode() int { return e.code }
