package quota

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Run leases on the embedded backend (see lease.go): one row per lease in
// table leases of quota.db, named "<credential>:<region>" (leaseID.name),
// decided by the backend's clock at microsecond precision, each operation one transaction like a quota decision. Rows of
// released leases are deleted; rows of crashed holders stay until taken.

// TryLock implements leaseLocker: it takes the lease when it has no row,
// its row expired (expires_us <= now) or its row holds token.
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

// Renew implements leaseLocker: it moves expires_us to now + ttl only if
// the row holds token and has not expired.
func (s *sqliteBackend) Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (renewed bool, err error) {
	err = s.inTx(ctx, "lease renew", true, func(tx *sql.Tx, nowUS int64) error {
		renewed, err = execOne(ctx, tx, `UPDATE leases SET expires_us = ? WHERE name = ? AND token = ? AND expires_us > ?`,
			nowUS+ceilTo(ttl, time.Millisecond)*1000, id.name(), token, nowUS)
		return err
	})
	return renewed && err == nil, err
}

// Unlock implements leaseLocker: it deletes the row only if it holds token.
func (s *sqliteBackend) Unlock(ctx context.Context, id leaseID, token string) error {
	return s.inTx(ctx, "lease unlock", true, func(tx *sql.Tx, _ int64) error {
		_, err := execOne(ctx, tx, `DELETE FROM leases WHERE name = ? AND token = ?`, id.name(), token)
		return err
	})
}

// BreakLease implements leaseLocker: it deletes the row of name if its
// holder is holder.
func (s *sqliteBackend) BreakLease(ctx context.Context, id leaseID, holder string) (broke bool, err error) {
	err = s.inTx(ctx, "lease break", true, func(tx *sql.Tx, _ int64) error {
		broke, err = execOne(ctx, tx, `DELETE FROM leases WHERE name = ? AND holder = ?`, id.name(), holder)
		return err
	})
	return broke && err == nil, err
}

// name is the row name of lease id.
func (id leaseID) name() string { return id.credential + ":" + id.region }

// execOne runs query in tx and reports whether it changed exactly one row.
func execOne(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Leases implements leaseLocker with one read-only transaction; it writes
// nothing, so it works on a backend opened WithSQLiteReadOnly.
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
