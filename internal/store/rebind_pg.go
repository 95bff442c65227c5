package store

import (
	"context"
	"database/sql/driver"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
)

// rebindConnector hands out connections that rewrite the store's SQLite
// placeholders (? and ?NNN) into PostgreSQL's ($N).
type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rebindConn{conn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx connection whose statements are rebound first
// (database/sql prefers PrepareContext to Prepare); the rest is pgx's.
type rebindConn struct{ *stdlib.Conn }

func (c rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(query), args)
}

func (c rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(query), args)
}

// CheckNamedValue stores a bool as 1 or 0: the columns SQLite knows as
// booleans are integers in both schemas.
func (c rebindConn) CheckNamedValue(v *driver.NamedValue) error {
	if b, ok := v.Value.(bool); ok {
		v.Value = int64(0)
		if b {
			v.Value = int64(1)
		}
	}
	return c.Conn.CheckNamedValue(v)
}

// rebound caches rebind's answers: the store's statements are few.
var rebound sync.Map

// rebindable matches what rebind rewrites (? and ?NNN) and what it leaves
// alone: string literals, quoted identifiers and comments.
var rebindable = regexp.MustCompile(`'[^']*(?:'|$)|"[^"]*(?:"|$)|--[^\n]*|\?[0-9]*`)

// rebind rewrites ?NNN as $NNN and each bare ? as the next $N, outside
// string literals, quoted identifiers and comments.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	if r, ok := rebound.Load(query); ok {
		return r.(string)
	}
	n := 0
	r := rebindable.ReplaceAllStringFunc(query, func(m string) string {
		switch {
		case m[0] != '?':
			return m
		case len(m) > 1:
			return "$" + m[1:]
		}
		n++
		return "$" + strconv.Itoa(n)
	})
	if len(query) < 4096 {
		rebound.Store(query, r)
	}
	return r
}
