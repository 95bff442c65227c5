package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxResponseBytes caps one API response body (8 MiB; a page of 50 videos is
// about 100 KB): a longer body is refused (ErrResponseTooLarge), never read
// into memory whole.
const MaxResponseBytes = 8 << 20

// ErrResponseTooLarge is the read error of a response body longer than
// MaxResponseBytes.
var ErrResponseTooLarge = errors.New("response body too large")

// capBody is an http.RoundTripper whose response bodies fail with
// ErrResponseTooLarge past MaxResponseBytes, and are copied into the buffer
// of withRawBody when the request's context carries one.
type capBody struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (c capBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > MaxResponseBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d MiB", ErrResponseTooLarge, resp.ContentLength, MaxResponseBytes>>20)
	}
	body := &cappedBody{rc: resp.Body, left: MaxResponseBytes}
	resp.Body = body
	if buf, ok := req.Context().Value(rawBodyKey{}).(*bytes.Buffer); ok {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(body, buf), body}
	}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte tells a body of exactly the cap from a longer one.
		if n, _ := b.rc.Read(make([]byte, 1)); n > 0 {
			return 0, fmt.Errorf("%w: more than %d MiB", ErrResponseTooLarge, MaxResponseBytes>>20)
		}
		return 0, io.EOF
	}
	n, err := b.rc.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
