package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"google.golang.org/api/googleapi"
)

// maxBackoff caps the exponential backoff between attempts of one call.
const maxBackoff = 30 * time.Second

// call sends one API call of method through the whole call-site protocol:
// reserve its cost (or apply the call site's policy when the limiter is
// unavailable), send it under the request timeout, and on a transient
// failure (5xx, 429, rate limit, timeout, connection reset, truncated body)
// back off with full jitter and try again, reserving every attempt because
// Google charges every attempt. After the last attempt, or on a permanent
// error, it returns the classified error (see apiError).
func call[T any](ctx context.Context, r *Runner, st *runState, method string, send func(context.Context) (T, error)) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		if err := r.reserve(ctx, st, method); err != nil {
			return zero, err
		}
		resp, err := sendOnce(ctx, r, st, method, send)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		if !retryable(err) || attempt >= r.Retries {
			err = r.apiError(ctx, st, method, err)
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return zero, err
		}
		wait := backoff(r.RetryBackoff, attempt)
		st.log.Warn().Err(err).Str("method", method).Int("attempt", attempt+1).
			Int64("backoff_ms", wait.Milliseconds()).Msg("transient API failure; retrying")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, ctx.Err()
		case <-t.C:
		}
	}
}

// sendOnce runs one attempt under the per-request timeout, reports it to
// OnCall and counts it on the run, and redacts the API key from transport
// errors (net/url errors quote the request URL).
func sendOnce[T any](ctx context.Context, r *Runner, st *runState, method string, send func(context.Context) (T, error)) (T, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	resp, err := send(reqCtx)
	st.calls[method]++
	if r.OnCall != nil {
		status := 200
		var ge *googleapi.Error
		switch {
		case errors.As(err, &ge):
			status = ge.Code
		case err != nil:
			status = 0
		}
		r.OnCall(method, status, time.Since(start))
	}
	return resp, Redact(err)
}

// retryable reports whether err is a transient failure worth another
// (charged) attempt: HTTP 5xx and 429, 403 rateLimitExceeded /
// userRateLimitExceeded, timeouts, connection resets and bodies cut short.
// quotaExceeded, keyInvalid, videoChartNotFound and malformed JSON are not.
func retryable(err error) bool {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		if ge.Code >= 500 || ge.Code == 429 {
			return true
		}
		for _, e := range ge.Errors {
			if e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded" {
				return true
			}
		}
		return false
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	// net/http reports a server that hung up before answering this way.
	return strings.Contains(err.Error(), "server closed") || strings.Contains(err.Error(), "connection reset")
}

// backoff returns the wait before attempt+1: full jitter over an
// exponential ceiling base·2^attempt capped at maxBackoff (AWS Architecture
// Blog, "Exponential Backoff And Jitter", 2015).
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
