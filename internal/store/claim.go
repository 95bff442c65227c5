package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"
)

// ErrClaimed is ClaimRegion's answer when another session holds the region's claim.
var ErrClaimed = errors.New("store: the region is claimed by another run")

// claimLockSpace is the first key of the claims' pg_advisory_lock(int, int) ("tfrc"); the second
// is hashtext of the credential and region.
const claimLockSpace = 0x74667263

// ClaimRegion claims credential's region for one run on PostgreSQL (docs/design.md §10a, used
// while the quota backend and its run leases are down): a session advisory lock on a connection
// of its own, held until release (which unlocks it and closes that connection) or until the
// process dies (the server frees it with the connection). ErrClaimed when another run holds it; on SQLite (one
// host) nothing is claimed. Other errors: the database cannot be reached.
func (s *Store) ClaimRegion(ctx context.Context, credential, region string) (release func(), err error) {
	if s.d.engine != PostgreSQL {
		return func() {}, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	discard := func() { // unlocks at once, then closes the session: no lock goes back to the pool
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		conn.ExecContext(uctx, `SELECT pg_advisory_unlock_all()`) //nolint:errcheck // closing frees it too, later
		conn.Raw(func(any) error { return driver.ErrBadConn })    //nolint:errcheck
		conn.Close()
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(?, hashtext(?))`, claimLockSpace, credential+":"+region).Scan(&ok); err != nil {
		discard()
		return nil, err
	}
	if !ok {
		discard()
		return nil, ErrClaimed
	}
	return discard, nil
}
