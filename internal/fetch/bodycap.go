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
// keyed rawBodyKey{} when the request's context carries one.
type capBody struct{ base http.RoundTripper }

func (c capBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > MaxResponseBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d MiB", ErrResponseTooLarge, resp.ContentLength, MaxResponseBytes>>20)
	}
	body := cappedBody{http.MaxBytesReader(nil, resp.Body, MaxResponseBytes)}
	resp.Body = body
	if buf, ok := req.Context().Value(rawBodyKey{}).(*bytes.Buffer); ok {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(body, buf), body}
	}
	return resp, nil
}

// cappedBody reads an http.MaxBytesReader, its error ErrResponseTooLarge.
type cappedBody struct{ io.ReadCloser }

func (b cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		err = fmt.Errorf("%w: more than %d MiB", ErrResponseTooLarge, MaxResponseBytes>>20)
	}
	return n, err
}
