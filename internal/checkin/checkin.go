// Package checkin reports runs to a monitor in healthchecks.io's ping protocol
// (https://healthchecks.io/docs/http_api/), as docs/operations.md "Check-ins" says:
// URL/start (Begin), then URL/<exit status> with the run's summary (Run.End).
package checkin

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/store"
)

// Timeout bounds the check-ins of a run: Begin does not wait for its ping;
// End waits for both pings at most this long in all.
const Timeout = 5 * time.Second

// RegionPlaceholder in the URL is replaced by the run's region in lower
// case: one setting serves a monitor per region (.../trendfetch-{region}).
const RegionPlaceholder = "{region}"

// client sends pings; it follows no redirect (the URL holds a ping key).
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Run is one run's check-ins. A nil *Run (no URL configured) does nothing.
type Run struct {
	base, rid string
	log       zerolog.Logger
	started   chan error // the /start ping's result
}

// Begin sends rawURL/start?rid=... for a run of region in the background and returns the run's
// check-ins; rawURL "" returns nil. log receives the one warning of a failed check-in.
func Begin(rawURL, region string, log zerolog.Logger) *Run {
	if rawURL == "" {
		return nil
	}
	r := &Run{
		base:    strings.TrimRight(strings.ReplaceAll(rawURL, RegionPlaceholder, strings.ToLower(region)), "/"),
		rid:     uuid.NewString(), // a random (version 4) UUID, as healthchecks.io's rid wants
		log:     log,
		started: make(chan error, 1),
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		r.started <- r.ping(ctx, "start", "")
	}()
	return r
}

// End waits for the start ping, then sends rawURL/<code>?rid=... with summary as the body, both
// within Timeout. When either failed it logs one warning naming the monitor's host, never the URL.
func (r *Run) End(code int, summary string) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var err error
	select {
	case err = <-r.started:
	case <-ctx.Done():
		err = errors.New("/start: no answer in time")
	}
	if err = cmp.Or(err, r.ping(ctx, fmt.Sprint(code), summary)); err != nil {
		host := ""
		if u, perr := url.Parse(r.base); perr == nil {
			host = u.Host
		}
		r.log.Warn().Str("monitor", host).Str("rid", r.rid).Str("error", err.Error()).Msg("check-in failed (the run's outcome is unchanged)")
	}
}

// ping POSTs body to base/suffix?rid=... and returns an error that never holds the URL.
func (r *Run) ping(ctx context.Context, suffix, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/"+suffix+"?rid="+r.rid, bytes.NewBufferString(body))
	if err != nil {
		return errors.New("the check-in URL (TRENDFETCH_CHECKIN_URL or runs.checkin_url_file) is not a valid URL")
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", "trendfetch")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return fmt.Errorf("/%s: %w", suffix, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("/%s: HTTP %d", suffix, resp.StatusCode)
	}
	return nil
}

// Summary is the one line a run reports when it ends: region, outcome, pages, videos and units per
// bucket, then the reason or error and, for a denial, when to retry, e.g. "US denied: 2 pages,
// 100 videos, units 2; quota denied ...; retry at 2026-12-02T08:00:00Z (in 42s)". A run that did
// not start (zero ID, e.g. a held lease) reports only err.
func Summary(region string, run store.Run, err error) string {
	var b strings.Builder
	if run.ID == 0 {
		fmt.Fprintf(&b, "%s not run", region)
	} else {
		fmt.Fprintf(&b, "%s %s: %d pages, %d videos", region, run.Outcome, run.Pages, run.Videos)
		for _, k := range slices.Sorted(maps.Keys(run.Units)) {
			fmt.Fprintf(&b, ", %s %d", k, run.Units[k])
		}
	}
	reason := run.Reason
	if err != nil && reason == "" {
		reason = err.Error()
	}
	if reason != "" {
		b.WriteString("; " + strings.Join(strings.Fields(reason), " "))
	}
	return b.String() + retryText(run)
}

// retryText is what a denied run's summary ends with: when a run can be
// admitted again, e.g. "; retry at 2026-12-02T08:00:00Z (in 1h30m0s)" (RFC
// 3339 UTC; the wait rounded up to the second); "" for any other run.
func retryText(run store.Run) string {
	if run.Outcome != store.OutcomeDenied || run.RetryAt.IsZero() {
		return ""
	}
	wait := (max(run.RetryAfter, 0) + time.Second - 1).Truncate(time.Second)
	return fmt.Sprintf("; retry at %s (in %s)", run.RetryAt.UTC().Format(time.RFC3339), wait)
}

// Secrets returns the parts of a check-in URL to mask in output: its userinfo password, its path
// segments but the last (the ping key of .../PING_KEY/SLUG) and the last when it is the only one or
// a UUID (.../UUID, .../ping/UUID), and the host with those segments (a segment too common to mask
// alone, such as "ping", is masked in the URL).
func Secrets(rawURL string) []string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return []string{rawURL}
	}
	var out []string
	if pw, ok := u.User.Password(); ok {
		out = append(out, pw)
	}
	segs := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	if n := len(segs); n > 1 && uuid.Validate(segs[n-1]) != nil {
		segs = segs[:n-1]
	}
	if len(segs) > 0 {
		out = append(out, u.Host+"/"+strings.Join(segs, "/"))
	}
	return append(out, segs...)
}
