package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"google.golang.org/api/googleapi"
)

// TestNeverLeft: only errors from before a connection exists, with no
// connection obtained, count as never having left the host.
func TestNeverLeft(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	dns := &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}
	wrap := func(err error) error { return &url.Error{Op: "Get", URL: "http://x/?key=k", Err: err} }
	for _, tc := range []struct {
		name    string
		err     error
		gotConn bool
		want    bool
	}{
		{"connection refused", wrap(refused), false, true},
		{"DNS failure", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: dns}), false, true},
		{"bare DNS error", fmt.Errorf("lookup: %w", dns), false, true},
		{"dial error after a connection was obtained (net/http retry)", wrap(refused), true, false},
		{"read timeout once connected", wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), true, false},
		{"reset while reading", wrap(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), false, false},
		{"proxy refused", wrap(&net.OpError{Op: "proxyconnect", Net: "tcp", Err: refused}), false, false},
		{"request timeout", wrap(context.DeadlineExceeded), false, false},
		{"body cut short", io.ErrUnexpectedEOF, true, false},
		{"an answer", &googleapi.Error{Code: 500}, true, false},
		{"no error", nil, false, false},
	} {
		if got := neverLeft(tc.err, tc.gotConn); got != tc.want {
			t.Errorf("%s: neverLeft(%v, gotConn %v) = %v, want %v", tc.name, tc.err, tc.gotConn, got, tc.want)
		}
	}
	if !errors.Is(wrap(refused), syscall.ECONNREFUSED) {
		t.Fatal("the refused fixture is not what net/http returns")
	}
}
