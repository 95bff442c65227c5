package fetch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/quota"
	"google.golang.org/api/googleapi"
)

// apiCall is a youtube/v3 request (req.Context(ctx) returns one, ready to send).
type apiCall[T any] interface {
	Do(...googleapi.CallOption) (T, error)
}

// maxBackoff caps the exponential backoff between attempts of one call;
// maxRetryAfter the wait an answer's Retry-After asks for.
const maxBackoff, maxRetryAfter = 30 * time.Second, time.Minute

// call sends one call of method through the call-site protocol (package doc):
// each attempt reserved (Google charges every one), counted, told to OnCall,
// refunded if it never left the host; a transient failure (retryable) retried
// after Retry-After or a backoff, the last error classified (apiError).
func call[C apiCall[T], T any](ctx context.Context, r *Runner, st *runState, method string, req func(context.Context) C) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		res, err := r.reserve(ctx, st, method)
		if err != nil {
			return zero, err
		}
		resp, gotConn, err := send(ctx, r, st, method, req)
		if err == nil {
			return resp, nil
		}
		if err = redact(err); neverLeft(err, gotConn) {
			r.refund(ctx, st, method, res, err)
		}
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		if !retryable(err) || attempt >= st.set.Retries {
			err = r.apiError(ctx, st, method, err)
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return zero, err
		}
		if err := sleepBeforeRetry(ctx, st, method, err, attempt); err != nil {
			return zero, err
		}
	}
}

// send sends one attempt of method under the request timeout, counts it and tells OnCall;
// gotConn tells whether it may have left the host (a connection was obtained).
func send[C apiCall[T], T any](ctx context.Context, r *Runner, st *runState, method string, req func(context.Context) C) (resp T, gotConn bool, err error) {
	var got atomic.Bool
	reqCtx, cancel := context.WithTimeout(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { got.Store(true) },
	}), st.set.Timeout)
	start := time.Now()
	resp, err = req(reqCtx).Do()
	cancel()
	st.calls[method]++
	if r.OnCall != nil {
		r.OnCall(method, httpStatus(err), time.Since(start))
	}
	return resp, got.Load(), err
}

// httpStatus is the HTTP status of an attempt's error for OnCall: 200 for nil, the API
// error's code, 0 when no answer came.
func httpStatus(err error) int {
	if err == nil {
		return 200
	}
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		return ge.Code
	}
	return 0
}

// sleepBeforeRetry waits before attempt+2 of method: the answer's Retry-After (whole seconds,
// capped at maxRetryAfter), else the backoff; ctx's error when it ends first.
func sleepBeforeRetry(ctx context.Context, st *runState, method string, err error, attempt int) error {
	wait := backoff(st.set.RetryBackoff, attempt)
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		if secs, _ := strconv.Atoi(ge.Header.Get("Retry-After")); secs > 0 {
			wait = min(time.Duration(secs)*time.Second, maxRetryAfter)
		}
	}
	st.log.Warn().Err(err).Str("method", method).Int("attempt", attempt+1).
		Int64("backoff_ms", wait.Milliseconds()).Msg("transient API failure; retrying")
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// neverLeft reports whether a failed attempt provably never left the host: no
// connection was obtained (not even for net/http's retry on a reused one) and
// err is a *net.DNSError or a "dial" *net.OpError. Anything else may have
// reached Google (timeouts once connected, resets, TLS, "proxyconnect").
func neverLeft(err error, gotConn bool) bool {
	if err == nil || gotConn {
		return false
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	opErr, ok := errors.AsType[*net.OpError](err)
	return ok && opErr.Op == "dial"
}

// refund gives back the reservation of an attempt that never left the host, in the quota backend
// and on the run record; a failed refund leaves the units counted (the safe side).
func (r *Runner) refund(ctx context.Context, st *runState, method string, res quota.Reservation, cause error) {
	if res.IsZero() {
		return // sent unmetered (fail-open): nothing was reserved
	}
	ctx = context.WithoutCancel(ctx)
	log := st.log.With().Str("method", method).AnErr("cause", redact(cause)).Logger()
	refunded, err := r.Limiter.Refund(ctx, r.Credential, res)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("cannot refund a call that never left the host; its units stay counted")
		return
	case !refunded:
		log.Info().Msg("a call that never left the host stays counted: a later reservation came first")
		return
	}
	units := res.Units()
	for bucket, u := range units {
		st.run.Units[bucket] -= u
	}
	if err := r.Store.RecordUsage(ctx, *st.run); err != nil {
		log.Warn().Err(err).Msg("cannot record the run's units so far")
	}
	log.Info().Interface("refunded", units).Msg("the call never left the host; its units were refunded")
}

// retryable reports whether err is a transient failure worth another (charged) attempt: HTTP 5xx, a
// per-minute quota answer, timeouts, connection resets and bodies cut short.
func retryable(err error) bool {
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		if kind, _ := quotaAnswerOf(ge); kind != notQuota {
			return kind == perMinute
		}
		return ge.Code >= 500
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// net/http reports a server that hung up before answering this way.
	return strings.Contains(err.Error(), "server closed") || strings.Contains(err.Error(), "connection reset")
}

// backendDown reports whether err says the quota backend is unreachable or
// out of memory: the call sites' policies apply (docs/design.md §4).
func backendDown(err error) bool {
	return errors.Is(err, quota.ErrUnavailable) || errors.Is(err, quota.ErrOutOfMemory)
}

// backoff returns the wait before attempt+1: full jitter over an exponential ceiling base·2^attempt
// capped at maxBackoff (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015).
func backoff(base time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	ceil := base << min(attempt, 20)
	if ceil > maxBackoff || ceil <= 0 {
		ceil = maxBackoff
	}
	return time.Duration(rand.Int64N(int64(ceil)) + 1)
}

// reserve reserves one call of method before it is sent. It returns nil when the call may go ahead
// (admitted with its Reservation, or unmetered under fail-open with none), a *StopError on denial
// or fail-closed, or a configuration error.
func (r *Runner) reserve(ctx context.Context, st *runState, method string) (quota.Reservation, error) {
	run, log := st.run, st.log
	if st.limiterDown == nil {
		// On the record before the limiter has it, taken back unless admitted (docs/design.md §5).
		cs, _ := r.Limiter.Charges(method)
		record := func(sign int64) {
			for _, c := range cs {
				run.Units[c.Bucket] += sign * c.Units
			}
			if err := detached(ctx, func(ctx context.Context) error { return r.Store.RecordUsage(ctx, *run) }); err != nil {
				log.Warn().Err(err).Msg("cannot record the run's units so far")
			}
		}
		record(1)
		d, err := r.Limiter.Reserve(ctx, r.Credential, method)
		if err == nil && d.Allowed {
			countShadowDenied(st, method, d)
			return d.Reservation, nil
		}
		record(-1)
		switch {
		case err == nil:
			if d.ClockBehind > 0 {
				log.Warn().Str("bucket", d.DeniedBucket).Dur("clock_behind", d.ClockBehind).Time("retry_at", d.Now.Add(d.RetryAfter)).
					Msg("the local clock went back: the quota backend admits nothing until it catches up")
			}
			return quota.Reservation{}, Denied(run.Region, method, d)
		case backendDown(err):
			if ctx.Err() != nil {
				return quota.Reservation{}, ctx.Err()
			}
			st.limiterDown = err
			log.Warn().Err(err).Msg("quota backend unavailable; applying call site policies for the rest of this run")
		default:
			return quota.Reservation{}, err
		}
	}
	if errors.Is(st.limiterDown, quota.ErrOutOfMemory) { // nothing can be recorded: every call site fails closed
		return quota.Reservation{}, &StopError{Region: run.Region, Reason: fmt.Sprintf("quota backend out of memory: it cannot record %s (Redis maxmemory reached under noeviction); failing closed", method)}
	}
	switch r.Policy(method) {
	case callsite.FailClosed:
		return quota.Reservation{}, &StopError{Region: run.Region, Reason: fmt.Sprintf("limiter unavailable (%s is fail-closed)", method)}
	case callsite.Reserve:
		return quota.Reservation{}, r.spendReserve(ctx, st, method)
	}
	run.Unmetered++
	log.Debug().Str("method", method).Msg("limiter unavailable: call sent unmetered (fail-open)")
	return quota.Reservation{}, nil
}

// spendReserve takes one call of method from this host's outage reserve while the backend is
// unreachable, counting its units on the run; a *StopError when none is held or it is spent.
func (r *Runner) spendReserve(ctx context.Context, st *runState, method string) error {
	why := errors.New("none is held (set quota.reserve)")
	if r.Reserve != nil {
		why = r.Limiter.SpendReserve(r.Reserve, r.Credential, method)
	}
	if why != nil {
		return &StopError{Region: st.run.Region, Reason: fmt.Sprintf("limiter unavailable (%s spends from this host's outage reserve): %v", method, why)}
	}
	cs, _ := r.Limiter.Charges(method)
	for _, c := range cs {
		st.run.Units[c.Bucket] += c.Units
	}
	if err := detached(ctx, func(ctx context.Context) error { return r.Store.RecordUsage(ctx, *st.run) }); err != nil {
		st.log.Warn().Err(err).Msg("cannot record the run's units so far")
	}
	st.log.Debug().Str("method", method).Msg("limiter unavailable: call spent from this host's outage reserve")
	return nil
}

// countShadowDenied logs and counts on the run each shadow bucket that
// would have denied the admitted call d of method (the backend counts them
// too: quota status); the run record stores them with its usage.
func countShadowDenied(st *runState, method string, d quota.Decision) {
	for _, b := range d.ShadowDenied {
		st.log.Info().Str("bucket", b).Str("method", method).Msg("shadow bucket would have denied this call")
		if st.run.ShadowDenials == nil {
			st.run.ShadowDenials = map[string]map[string]int64{}
		}
		if st.run.ShadowDenials[b] == nil {
			st.run.ShadowDenials[b] = map[string]int64{}
		}
		st.run.ShadowDenials[b][method]++
	}
}

// Denied builds the *StopError of a denied reservation of method for
// region ("" outside a run), with the decision's Retry-After.
func Denied(region, method string, d quota.Decision) *StopError {
	stop := &StopError{Region: region, Reason: fmt.Sprintf("quota denied %s by bucket %q", method, d.DeniedBucket),
		RetryAfter: d.RetryAfter, RetryAt: cmp.Or(d.Now, time.Now()).Add(d.RetryAfter)}
	switch until := d.ExhaustedUntil.UTC().Format(time.RFC3339); {
	case d.SiteExhausted:
		stop.Site = method
		stop.Reason = fmt.Sprintf("%s skipped: its own Google quota is marked spent upstream until %s (`trendfetch quota status` says why)", method, until)
	case d.Exhausted:
		stop.Reason = "the project's Google quota is marked spent upstream until " + until + " (`trendfetch quota status` says why)"
	case d.ClockBehind > 0:
		stop.Reason = fmt.Sprintf("quota denied %s: the local clock went back by %s (it reads earlier than the newest entry of bucket %q); nothing is admitted until it catches up, or run `trendfetch quota reset` if the earlier clock was wrong",
			method, roundUp(d.ClockBehind), d.DeniedBucket)
	}
	return stop
}

// quotaAnswer is what a quota answer of the API says (docs/design.md §3, §4
// upstream feedback): per minute is retried, per day never.
type quotaAnswer int

const (
	notQuota quotaAnswer = iota
	perMinute
	perDay
)

// quotaAnswerOf classifies ge by docs/design.md §4's rules (upstream feedback)
// and names it in one line (why).
func quotaAnswerOf(ge *googleapi.Error) (kind quotaAnswer, why string) {
	texts := []string{ge.Message}
	reasons := map[string]bool{}
	why = fmt.Sprintf("HTTP %d", ge.Code)
	for _, e := range ge.Errors {
		texts, reasons[e.Reason] = append(texts, e.Message), true
	}
	limit := ""
	for _, d := range ge.Details {
		m, _ := d.(map[string]any)
		if meta, _ := m["metadata"].(map[string]any); meta != nil && m["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" {
			limit, _ = meta["quota_limit"].(string)
			texts = append(texts, limit)
		}
	}
	flat := strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.ToLower(strings.Join(texts, "\n")))
	says := func(unit string) bool { return strings.Contains(flat, "per"+unit) } // "per day", "PerDay", "per-day"
	switch {
	case reasons["quotaExceeded"] || reasons["dailyLimitExceeded"] || says("day"):
		kind = perDay
	case says("minute") || reasons["rateLimitExceeded"] || reasons["userRateLimitExceeded"] || ge.Code == 429:
		kind = perMinute
	default:
		return notQuota, ""
	}
	named := limit != ""
	for _, r := range []string{"quotaExceeded", "dailyLimitExceeded", "rateLimitExceeded", "userRateLimitExceeded"} {
		if reasons[r] {
			why, named = why+" "+r, true
		}
	}
	if ge.Code == 429 {
		why += " RESOURCE_EXHAUSTED"
	}
	if limit != "" {
		why += ": limit " + limit
	} else if !named && ge.Message != "" {
		why += ": " + ge.Message
	}
	return kind, why
}

// apiError classifies an error answer of the API (docs/design.md §3) to a call not cancelled.
func (r *Runner) apiError(ctx context.Context, st *runState, method string, err error) error {
	run := st.run
	ge, ok := errors.AsType[*googleapi.Error](err)
	if !ok {
		return fmt.Errorf("%s for %s failed: %w", method, run.Region, err)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	if kind, why := quotaAnswerOf(ge); kind == perDay {
		return r.markSpent(ctx, st, method, ge.Code, why)
	}
	switch {
	case reason == "keyInvalid" || strings.Contains(ge.Body, "API_KEY_INVALID"):
		return &CredentialError{Credential: r.Credential, Reason: "keyInvalid"}
	case ge.Code >= 300 && ge.Code < 400:
		return fmt.Errorf("%s for %s: API answered HTTP %d, a redirect: trendfetch never follows one (the key would go with it); check api.endpoint", method, run.Region, ge.Code)
	case reason == "videoChartNotFound":
		return fmt.Errorf("region %s has no mostPopular chart (the API answered %d videoChartNotFound)", run.Region, ge.Code)
	}
	return fmt.Errorf("%s for %s: API answered HTTP %d %s: %s", method, run.Region, ge.Code, reason, ge.Message)
}

// redact removes the API key and user info from the URL a *url.Error quotes and cuts the texts of
// an error answer of the API (boundAnswer); other errors pass unchanged.
func redact(err error) error {
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		boundAnswer(ge)
		return err
	}
	ue, ok := errors.AsType[*url.Error](err)
	if !ok {
		return err
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return &url.Error{Op: ue.Op, URL: "(url redacted)", Err: ue.Err}
	}
	if q := u.Query(); q.Has("key") {
		q.Set("key", "REDACTED")
		u.RawQuery = q.Encode()
	}
	u.User = nil
	return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
}

// MaxUpstreamText is the most bytes of one text of an error answer of the API (its message, an
// error's reason, domain or message, a detail) kept to log, return or store; its body keeps 8 times
// as many, and at most maxAnswerParts errors and details are kept. A longer text is cut, ending in
// "…": an answer of megabytes never reaches the log whole.
const MaxUpstreamText = 512

// maxAnswerParts is how many errors and details of an API answer are kept.
const maxAnswerParts = 8

// boundAnswer cuts ge's texts, in place, to MaxUpstreamText (see there).
func boundAnswer(ge *googleapi.Error) {
	ge.Message = cutText(ge.Message, MaxUpstreamText)
	ge.Body = cutText(ge.Body, 8*MaxUpstreamText)
	ge.Errors = ge.Errors[:min(len(ge.Errors), maxAnswerParts)]
	for i, e := range ge.Errors {
		ge.Errors[i] = googleapi.ErrorItem{Reason: cutText(e.Reason, MaxUpstreamText), Message: cutText(e.Message, MaxUpstreamText)}
	}
	ge.Details = ge.Details[:min(len(ge.Details), maxAnswerParts)]
	for i, d := range ge.Details {
		if raw, err := json.Marshal(d); err != nil || len(raw) > MaxUpstreamText {
			ge.Details[i] = cutText(string(raw), MaxUpstreamText) // no longer read as an ErrorInfo
		}
	}
}

// cutText returns s cut to at most n bytes, ending in "…" when cut (a rune cut in two is dropped).
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-len("…")], "") + "…"
}

// markSpent marks what a per-day quota answer (HTTP code, why) to method names
// spent in the shared backend and returns the run's *StopError (docs/design.md §4, upstream feedback).
func (r *Runner) markSpent(ctx context.Context, st *runState, method string, code int, why string) error {
	why = r.scrub(why)
	now := time.Now() // Google's day, not the run record's clock (Runner.Now)
	until := quota.NextPacificMidnight(now)
	mark, reason := quota.Mark{Until: until, Why: why}, "the API answered "+why+": the project's daily quota is spent"
	if site, _ := callsite.Lookup(method); code == 429 || site.GoogleBucket != "" {
		mark.Site, reason = method, fmt.Sprintf("%s skipped: the API answered %s: its own daily quota is spent", method, why)
	}
	if err := r.Limiter.MarkExhausted(context.WithoutCancel(ctx), r.Credential, mark); err != nil {
		st.log.Warn().Err(err).Str("method", method).Msg("cannot mark the quota spent in the quota backend")
	}
	return &StopError{Region: st.run.Region, Reason: reason, RetryAfter: until.Sub(now), RetryAt: until, Site: mark.Site}
}
