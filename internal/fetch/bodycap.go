package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxResponseBytes caps one API response body (8 MiB). A real page of
// videos.list with 50 videos is about 100 KB; a body beyond the cap is
// refused as a malformed page (ErrResponseTooLarge) instead of being read
// into memory whole.
const MaxResponseBytes = 8 << 20

// ErrResponseTooLarge is the read error of a response body longer than
// MaxResponseBytes.
var ErrResponseTooLarge = errors.New("response body too large")

// capBody is an http.RoundTripper whose response bodies fail with
// ErrResponseTooLarge after max bytes, and are copied into the buffer of
// withRawBody when the request's context carries one.
type capBody struct {
	base http.RoundTripper
	max  int64
}

// RoundTrip implements http.RoundTripper.
func (c capBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > c.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d MiB", ErrResponseTooLarge, resp.ContentLength, c.max>>20)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: c.max}
	if buf, ok := req.Context().Value(rawBodyKey{}).(*bytes.Buffer); ok {
		resp.Body = teeBody{Reader: io.TeeReader(resp.Body, buf), Closer: resp.Body}
	}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte tells a body of exactly max bytes from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than %d MiB", ErrResponseTooLarge, MaxResponseBytes>>20)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// teeBody is a response body read through an io.TeeReader.
type teeBody struct {
	io.Reader
	io.Closer
}
