package quota

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Run leases on the embedded backend (see lease.go): one row per held lease
// in table leases of the quota database (migrations/0001_quota.sql),
// decided by the local clock (the backend's clock, WithClock) at
// microsecond precision. Every operation is one BEGIN IMMEDIATE
// transaction, so lease decisions of every process using the file are
// serialized like quota decisions. Rows of released leases are deleted;
// rows of crashed holders stay until taken.

// leaseTx begins a BEGIN IMMEDIATE transaction and reads the clock once
// the write lock is held.
func (s *sqliteBackend) leaseTx(ctx context.Context) (*sql.Tx, int64, error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (sqlitedb's DSN)
	if err != nil {
		return nil, 0, err
	}
	return tx, s.clock().UnixMicro(), nil
}

// TryLock implements leaseLocker: in one transaction it takes the lease when it
// has no row, its row expired (expires_us <= now) or its row holds token,
// setting expires_us = now + ttl. Database failures wrap ErrUnavailable.
func (s *sqliteBackend) TryLock(ctx context.Context, name, token string, ttl time.Duration) (bool, string, time.Duration, error) {
	if err := checkLockArgs(name, token, ttl, true); err != nil {
		return false, "", 0, err
	}
	tx, nowUS, err := s.leaseTx(ctx)
	if err != nil {
		return false, "", 0, sqliteUnavailable("lease lock", err)
	}
	defer tx.Rollback()
	var curToken, curHolder string
	var expUS int64
	err = tx.QueryRowContext(ctx, `SELECT token, holder, expires_us FROM leases WHERE name = ?`, name).Scan(&curToken, &curHolder, &expUS)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, "", 0, sqliteUnavailable("lease lock", err)
	case expUS > nowUS && curToken != token:
		return false, curHolder, time.Duration(expUS-nowUS) * time.Microsecond, nil
	}
	holder := leaseHolderOf(token)
	_, err = tx.ExecContext(ctx, `INSERT INTO leases (name, token, holder, expires_us) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET token = excluded.token, holder = excluded.holder, expires_us = excluded.expires_us`,
		name, token, holder, nowUS+leaseTTLMillis(ttl)*1000)
	if err != nil {
		return false, "", 0, sqliteUnavailable("lease lock", err)
	}
	if err := tx.Commit(); err != nil {
		return false, "", 0, sqliteUnavailable("lease lock", err)
	}
	return true, holder, time.Duration(leaseTTLMillis(ttl)) * time.Millisecond, nil
}

// Renew implements leaseLocker: it sets expires_us = now + ttl only if the row
// holds token and has not expired. Database failures wrap ErrUnavailable.
func (s *sqliteBackend) Renew(ctx context.Context, name, token string, ttl time.Duration) (bool, error) {
	if err := checkLockArgs(name, token, ttl, true); err != nil {
		return false, err
	}
	tx, nowUS, err := s.leaseTx(ctx)
	if err != nil {
		return false, sqliteUnavailable("lease renew", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE leases SET expires_us = ? WHERE name = ? AND token = ? AND expires_us > ?`,
		nowUS+leaseTTLMillis(ttl)*1000, name, token, nowUS)
	if err != nil {
		return false, sqliteUnavailable("lease renew", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, sqliteUnavailable("lease renew", err)
	}
	if err := tx.Commit(); err != nil {
		return false, sqliteUnavailable("lease renew", err)
	}
	return n == 1, nil
}

// Unlock implements leaseLocker: it deletes the row only if it holds token.
// Database failures wrap ErrUnavailable.
func (s *sqliteBackend) Unlock(ctx context.Context, name, token string) error {
	if err := checkLockArgs(name, token, 0, false); err != nil {
		return err
	}
	tx, _, err := s.leaseTx(ctx)
	if err != nil {
		return sqliteUnavailable("lease unlock", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND token = ?`, name, token); err != nil {
		return sqliteUnavailable("lease unlock", err)
	}
	if err := tx.Commit(); err != nil {
		return sqliteUnavailable("lease unlock", err)
	}
	return nil
}
