package serve

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/net/netutil"
)

// Timeouts bound what a client can hold (docs/design.md §8): the time to send a request's headers,
// the whole request, the answer (from the end of the headers), and idle between keep-alive requests
// of a connection that sent the right token (or any, without a token) and of one that did not.
type Timeouts struct {
	ReadHeader, Read, Write, Idle, IdleAnonymous time.Duration
}

// DefaultTimeouts are 5 s, 10 s, 30 s, 60 s and 5 s (docs/api.md).
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second,
	Idle: 60 * time.Second, IdleAnonymous: 5 * time.Second}

// NewServer returns an http.Server for h with the timeouts t (Read and Write raised to ReadHeader +
// requestTimeout + 1 s), 16 KiB of headers, and its error log written to l as JSON warnings. On a
// LimitListener, connections that did not authenticate are closed after t.IdleAnonymous.
func NewServer(h http.Handler, t Timeouts, requestTimeout time.Duration, l zerolog.Logger) *http.Server {
	floor := t.ReadHeader + requestTimeout + time.Second
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       max(t.Read, floor),
		WriteTimeout:      max(t.Write, floor),
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(errorLog{l}, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, state http.ConnState) {
			if lc, ok := c.(*limitedConn); ok && state == http.StateIdle && !lc.authenticated.Load() {
				lc.idleAnonymous.Store(int64(t.IdleAnonymous))
			}
		},
	}
}

// errorLog writes net/http's error log lines as zerolog warnings.
type errorLog struct{ l zerolog.Logger }

func (e errorLog) Write(p []byte) (int, error) {
	e.l.Warn().Str("source", "net/http").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

type connKey struct{}

// LimitListener caps ln's open connections: at most total at once (more wait in the backlog) and
// perIP per client address (IPv6 by /64); a connection over perIP is answered 503 and closed.
func LimitListener(ln net.Listener, total, perIP int) net.Listener {
	return &limitListener{Listener: netutil.LimitListener(ln, total), perIP: perIP, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	perIP int

	mu   sync.Mutex
	open map[string]int
}

// tooManyConns is the whole answer to a connection over the per-address cap.
var tooManyConns = func() string {
	body := `{"error":{"code":"too_many_connections","message":"too many open connections from this address (serve.max_conns_per_ip): reuse fewer connections"}}` + "\n"
	return fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}()

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr().String(), "")
		l.mu.Lock()
		n := l.open[key]
		if n < l.perIP {
			l.open[key] = n + 1
		}
		l.mu.Unlock()
		if n >= l.perIP {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write([]byte(tooManyConns))
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, release: sync.OnceFunc(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[key]--; l.open[key] <= 0 {
				delete(l.open, key)
			}
		})}, nil
	}
}

// limitedConn is a connection counted by a limitListener.
type limitedConn struct {
	net.Conn
	release       func() // once
	authenticated atomic.Bool
	// idleAnonymous, when not 0, bounds the next read deadline (the
	// server's idle wait, set right after the StateIdle hook).
	idleAnonymous atomic.Int64
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if d := time.Duration(c.idleAnonymous.Swap(0)); d > 0 {
		if limit := time.Now().Add(d); t.IsZero() || t.After(limit) {
			t = limit
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
