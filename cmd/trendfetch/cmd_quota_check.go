package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/termtext"
)

// errWouldNotFit ends `quota check` when the calls do not fit now (exit 75,
// like a denial: retry later); errNeverFits when they exceed a bucket's
// limit (exit 2).
var (
	errWouldNotFit = errors.New("the calls do not fit now")
	errNeverFits   = errors.New("the calls can never fit: they exceed a bucket's limit")
)

// checkOut is the machine shape of `quota check --json`.
type checkOut struct {
	Credential string `json:"credential"`
	Method     string `json:"method"`
	Count      int64  `json:"count"`
	// Fits reports that the calls fit now.
	Fits bool `json:"fits"`
	// FitsAt is the earliest time they can fit (null: now, or never);
	// FitsBy the time by which they fit at the latest. Exact when equal.
	FitsAt  *time.Time    `json:"fits_at"`
	FitsBy  *time.Time    `json:"fits_by"`
	Buckets []checkBucket `json:"buckets"`
}

// checkBucket is one bucket the method charges.
type checkBucket struct {
	Name      string     `json:"name"`
	Need      int64      `json:"need"`
	Remaining int64      `json:"remaining"`
	Limit     int64      `json:"limit"`
	FitsAt    *time.Time `json:"fits_at"`
	FitsBy    *time.Time `json:"fits_by"`
}

// newQuotaCheckCmd is `trendfetch quota check`: built only on the
// limiter's public Status and the configured cost table.
func newQuotaCheckCmd(a *app) *cobra.Command {
	var (
		method string
		count  int64
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "check --method METHOD [--count N] [--json]",
		Short: "Tell whether N calls of a method would fit now, and if not when; reserves nothing",
		Long: `Tell whether N calls of METHOD (a key of quota.costs) fit the credential's
buckets now, and if not, when: exactly when the status knows (one call of
cost 1, a call of the largest cost, a calendar bucket's next Pacific midnight,
an upstream exhaustion marker), otherwise the earliest and the latest time.
Nothing is reserved or changed.

Exit 0 when the calls fit now, 75 when they fit later, 2 when they never fit
(more than a bucket's limit).`,
		Example: "  trendfetch quota check --method search.list --count 5\n  trendfetch quota check --method videos.list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 1 {
				return usagef("trendfetch quota check --method videos.list --count 1", "--count %d: must be at least 1", count)
			}
			if err := a.loadConfig(); err != nil {
				return err
			}
			charges, ok := a.cfg.Quota.Costs[method]
			if !ok {
				known := sortedCostKeys(a.cfg.Quota.Costs)
				return usagef("trendfetch quota check --method "+cmp.Or(termtext.Closest(method, known), known[0]),
					"--method %q: not in the cost table (quota.costs has %s)", termtext.Clip(method, 80), strings.Join(known, ", "))
			}
			var st quota.Status
			if a.quotaDBMissing() {
				st = quota.Status{Reachable: true, Now: time.Now()} // nothing spent: every bucket is empty
				for _, b := range a.cfg.Quota.Buckets {
					st.Buckets = append(st.Buckets, quota.BucketStatus{Bucket: quota.Bucket{Name: b.Name, Limit: b.Limit, Window: b.Window.Std(), Calendar: b.Calendar}, Remaining: b.Limit})
				}
			} else {
				lim, err := openLimiterReadOnly(a.cfg, a.log)
				if err != nil {
					return err
				}
				defer lim.Close()
				if st = lim.Status(cmd.Context(), a.cfg.Credential); !st.Reachable {
					return statusError(st)
				}
			}
			out := checkCalls(st, charges, count)
			out.Credential, out.Method = a.cfg.Credential, method
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else {
				printCheck(a, out)
			}
			switch {
			case out.Fits:
				return nil
			case out.FitsBy == nil:
				return &usageError{err: errNeverFits}
			}
			return errWouldNotFit
		},
	}
	cmd.Flags().StringVar(&method, "method", "", "API method, e.g. search.list (a key of quota.costs)")
	cmd.Flags().Int64Var(&count, "count", 1, "number of calls")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	_ = cmd.MarkFlagRequired("method")
	return cmd
}

// checkCalls answers whether count calls charging charges (bucket: units per
// call) fit the status st now, and if not the earliest and latest time.
func checkCalls(st quota.Status, charges map[string]int64, count int64) checkOut {
	now := st.Now
	out := checkOut{Count: count, Fits: true}
	var at, by time.Time
	later := func(t *time.Time, v time.Time) {
		if v.After(*t) {
			*t = v
		}
	}
	if st.ExhaustedUntil.After(now) {
		out.Fits = false
		later(&at, st.ExhaustedUntil)
		later(&by, st.ExhaustedUntil)
	}
	never := false
	for _, b := range st.Buckets {
		units, ok := charges[b.Name]
		if !ok {
			continue
		}
		cb := checkBucket{Name: b.Name, Need: units * count, Remaining: b.Remaining, Limit: b.Limit}
		switch {
		case cb.Need > b.Limit:
			never = true
		case cb.Need > b.Remaining:
			var lo, hi time.Time
			switch {
			case b.Calendar:
				lo = quota.NextPacificMidnight(now)
				hi = lo
			case cb.Need == 1 && b.RetryAfterOne > 0:
				lo = now.Add(b.RetryAfterOne)
				hi = lo
			case cb.Need == b.MaxCost && b.RetryAfterMax > 0:
				lo = now.Add(b.RetryAfterMax)
				hi = lo
			default:
				// The oldest entry leaving is the soonest anything frees;
				// by now + window every entry in the window has left.
				lo, hi = now.Add(max(b.RetryAfterOne, time.Nanosecond)), now.Add(b.Window)
				if !b.Oldest.IsZero() {
					lo = b.Oldest.Add(b.Window)
				}
			}
			lo, hi = ceilSecond(lo), ceilSecond(hi)
			cb.FitsAt, cb.FitsBy = &lo, &hi
			out.Fits = false
			later(&at, lo)
			later(&by, hi)
		}
		out.Buckets = append(out.Buckets, cb)
	}
	if never {
		out.Fits = false
		return out
	}
	if !out.Fits {
		// Whole seconds, rounded up: never early.
		at, by = ceilSecond(at), ceilSecond(by)
		out.FitsAt, out.FitsBy = &at, &by
	}
	return out
}

func printCheck(a *app, out checkOut) {
	calls := fmt.Sprintf("%d %s call", out.Count, out.Method)
	if out.Count != 1 {
		calls += "s"
	}
	var parts []string
	for _, b := range out.Buckets {
		parts = append(parts, fmt.Sprintf("%s needs %d, %d of %d left", b.Name, b.Need, b.Remaining, b.Limit))
	}
	detail := strings.Join(parts, "; ")
	switch {
	case out.Fits:
		fmt.Fprintf(a.stdout, "%s fit now (credential %s: %s)\n", calls, out.Credential, detail)
	case out.FitsBy == nil:
		fmt.Fprintf(a.stdout, "%s never fit (credential %s: %s)\n", calls, out.Credential, detail)
	case out.FitsAt.Equal(*out.FitsBy):
		fmt.Fprintf(a.stdout, "%s fit at %s (credential %s: %s)\n", calls, out.FitsAt.Format("2006-01-02 15:04:05 MST"), out.Credential, detail)
	default:
		fmt.Fprintf(a.stdout, "%s fit not before %s and by %s at the latest (credential %s: %s)\n", calls,
			out.FitsAt.Format("2006-01-02 15:04:05 MST"), out.FitsBy.Format("2006-01-02 15:04:05 MST"), out.Credential, detail)
	}
}

// ceilSecond is t in UTC rounded up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		t = r.Add(time.Second)
	}
	return t.UTC()
}
