package quota

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Run leases on the embedded backend: one row per lease in table leases of
// quota.db, each operation one transaction on the backend's clock.

// TryLock implements leaseLocker.
func (s *sqliteBackend) TryLock(ctx context.Context, id leaseID, token string, ttl time.Duration) (ok bool, holder string, remaining time.Duration, err error) {
	err = s.inTx(ctx, "lease lock", true, func(tx *sql.Tx, nowUS int64) error {
		var curToken string
		var expUS int64
		err := tx.QueryRowContext(ctx, `SELECT token, holder, expires_us FROM leases WHERE name = ?`, id.name()).Scan(&curToken, &holder, &expUS)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case expUS > nowUS && curToken != token:
			remaining = time.Duration(expUS-nowUS) * time.Microsecond
			return nil
		}
		ok, holder, remaining = true, leaseHolderOf(token), time.Duration(ceilTo(ttl, time.Millisecond))*time.Millisecond
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (name, token, holder, expires_us) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET token = excluded.token, holder = excluded.holder, expires_us = excluded.expires_us`,
			id.name(), token, holder, nowUS+remaining.Microseconds())
		return err
	})
	if err != nil {
		return false, "", 0, err
	}
	return ok, holder, remaining, nil
}

// Renew implements leaseLocker.
func (s *sqliteBackend) Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, error) {
	return s.leaseExec(ctx, "renew", `UPDATE leases SET expires_us = ?2 + ?4 WHERE name = ?1 AND token = ?3 AND expires_us > ?2`,
		id, token, ceilTo(ttl, time.Millisecond)*1000)
}

// Unlock implements leaseLocker.
func (s *sqliteBackend) Unlock(ctx context.Context, id leaseID, token string) error {
	_, err := s.leaseExec(ctx, "unlock", `DELETE FROM leases WHERE name = ?1 AND token = ?3`, id, token)
	return err
}

// BreakLease implements leaseLocker.
func (s *sqliteBackend) BreakLease(ctx context.Context, id leaseID, holder string) (bool, error) {
	return s.leaseExec(ctx, "break", `DELETE FROM leases WHERE name = ?1 AND holder = ?3`, id, holder)
}

// leaseExec runs query (?1 the lease's name, ?2 now in Unix µs, then args)
// in a write transaction and reports whether it changed exactly one row.
func (s *sqliteBackend) leaseExec(ctx context.Context, op, query string, id leaseID, args ...any) (one bool, err error) {
	err = s.inTx(ctx, "lease "+op, true, func(tx *sql.Tx, nowUS int64) error {
		res, err := tx.ExecContext(ctx, query, append([]any{id.name(), nowUS}, args...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		one = n == 1
		return err
	})
	return one && err == nil, err
}

// name is the row name of lease id.
func (id leaseID) name() string { return id.credential + ":" + id.region }

// Leases implements leaseLocker with one read-only transaction.
func (s *sqliteBackend) Leases(ctx context.Context, credential string) (out []LeaseInfo, err error) {
	err = s.inTx(ctx, "lease list", false, func(tx *sql.Tx, nowUS int64) error {
		rows, err := tx.QueryContext(ctx, `SELECT name, holder, expires_us FROM leases WHERE expires_us > ? ORDER BY name`, nowUS)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, holder string
			var exp int64
			if err := rows.Scan(&name, &holder, &exp); err != nil {
				return err
			}
			if region, ok := strings.CutPrefix(name, credential+":"); ok && !strings.Contains(region, ":") {
				out = append(out, LeaseInfo{Credential: credential, Region: region, Holder: describeHolder(holder), stored: holder,
					Remaining: time.Duration(exp-nowUS) * time.Microsecond})
			}
		}
		return rows.Err()
	})
	return out, err
}
