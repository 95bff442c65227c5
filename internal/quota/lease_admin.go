package quota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// runLease administration: listing held run leases and breaking one whose
// holder is known to be gone (restic's stale-lock rule, internal/restic/lock.go:
// a lock whose holder is a process of this host that no longer exists is
// stale and may be removed; others are removed by the user). Both backends
// implement leaseAdmin.

// LeaseInfo is one held (unexpired) run lease.
type LeaseInfo struct {
	// Credential and Region name the lease (leaseName(Credential, Region)).
	Credential, Region string
	// Holder is the holder's description, e.g. "host-a pid 123 since 2026-11-23T07:00:00Z".
	Holder string
	// stored is the holder as the lease stores it (lease_holder.go), which
	// BreakLease matches.
	stored string
	// Remaining is the time until the lease expires unless renewed (0 if unknown).
	Remaining time.Duration
}

// leaseAdmin lists and breaks run leases.
type leaseAdmin interface {
	// Leases returns the unexpired leases of credential, by region.
	Leases(ctx context.Context, credential string) ([]LeaseInfo, error)
	// BreakLease frees lease name only if it is held by holder (the
	// description, as reported by TryLock or Leases): a lease renewed or
	// taken by another holder meanwhile is left alone. It reports whether
	// it freed the lease.
	BreakLease(ctx context.Context, name, holder string) (bool, error)
}

var (
	_ leaseAdmin = (*sqliteBackend)(nil)
	_ leaseAdmin = (*redisBackend)(nil)
)

// Leases returns the held run leases of credential (see leaseAdmin).
// Backend failures wrap ErrUnavailable.
func (l *Limiter) Leases(ctx context.Context, credential string) ([]LeaseInfo, error) {
	a, ok := l.backend.(leaseAdmin)
	if !ok {
		return nil, fmt.Errorf("quota: backend %s does not support run leases", l.backend.Name())
	}
	return a.Leases(ctx, credential)
}

// BreakLease frees the run lease li (from Leases) if its holder still
// holds it and reports whether it did. Use it only when the holder is known
// to be gone: a live holder loses its lease at its next renewal and stops.
// Backend failures wrap ErrUnavailable.
func (l *Limiter) BreakLease(ctx context.Context, li LeaseInfo) (bool, error) {
	a, ok := l.backend.(leaseAdmin)
	if !ok {
		return false, fmt.Errorf("quota: backend %s does not support run leases", l.backend.Name())
	}
	if li.stored == "" {
		return false, errors.New("quota: break lease: empty holder")
	}
	return a.BreakLease(ctx, leaseName(li.Credential, li.Region), li.stored)
}

// Leases implements leaseAdmin with one read-only transaction of table
// leases; it writes nothing, so it works on a backend
// opened WithSQLiteReadOnly.
func (s *sqliteBackend) Leases(ctx context.Context, credential string) ([]LeaseInfo, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // plain BEGIN
	if err != nil {
		return nil, sqliteUnavailable("lease list", err)
	}
	defer tx.Rollback()
	nowUS := s.clock().UnixMicro()
	rows, err := tx.QueryContext(ctx, `SELECT name, holder, expires_us FROM leases WHERE expires_us > ? ORDER BY name`, nowUS)
	if err != nil {
		return nil, sqliteUnavailable("lease list", err)
	}
	defer rows.Close()
	var out []LeaseInfo
	for rows.Next() {
		var name, holder string
		var exp int64
		if err := rows.Scan(&name, &holder, &exp); err != nil {
			return nil, sqliteUnavailable("lease list", err)
		}
		cred, region, err := splitLeaseName(name)
		if err != nil || cred != credential {
			continue
		}
		out = append(out, LeaseInfo{Credential: cred, Region: region, Holder: describeHolder(holder), stored: holder,
			Remaining: time.Duration(exp-nowUS) * time.Microsecond})
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteUnavailable("lease list", err)
	}
	return out, nil
}

// BreakLease implements leaseAdmin: it deletes the row of name if its
// holder is holder, in one BEGIN IMMEDIATE transaction.
func (s *sqliteBackend) BreakLease(ctx context.Context, name, holder string) (bool, error) {
	tx, _, err := s.leaseTx(ctx)
	if err != nil {
		return false, sqliteUnavailable("lease break", err)
	}
	defer tx.Rollback()
	var res sql.Result
	if res, err = tx.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return false, sqliteUnavailable("lease break", err)
	}
	n, _ := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return false, sqliteUnavailable("lease break", err)
	}
	return n == 1, nil
}

// Leases implements leaseAdmin with SCAN over the credential's lease keys
// (on the node that owns the credential's slot under Cluster) and one GET
// and PTTL per lease.
func (r *redisBackend) Leases(ctx context.Context, credential string) ([]LeaseInfo, error) {
	if err := redisCheckCredential(credential); err != nil {
		return nil, err
	}
	var node redis.Cmdable = r.client
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, r.stateKey(credential))
		if err != nil {
			return nil, r.fail("lease list", credential, err)
		}
		node = n
	}
	prefix := r.leaseKey(credential, "")
	var out []LeaseInfo
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, redisGlobEscape(prefix)+"*", 1000).Result()
		if err != nil {
			return nil, r.fail("lease list", credential, err)
		}
		for _, k := range keys {
			val, err := node.Get(ctx, k).Result()
			if errors.Is(err, redis.Nil) {
				continue // expired meanwhile
			}
			if err != nil {
				return nil, r.fail("lease list", credential, err)
			}
			pttl, err := node.PTTL(ctx, k).Result()
			if err != nil {
				return nil, r.fail("lease list", credential, err)
			}
			out = append(out, LeaseInfo{Credential: credential, Region: strings.TrimPrefix(k, prefix),
				Holder: describeHolder(leaseHolderOf(val)), stored: leaseHolderOf(val), Remaining: max(pttl, 0)})
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Region < out[j].Region })
	return out, nil
}

// BreakLease implements leaseAdmin with lua/lease.lua.
func (r *redisBackend) BreakLease(ctx context.Context, name, holder string) (bool, error) {
	key, credential, err := r.leaseKeyOf(name)
	if err != nil {
		return false, err
	}
	n, err := redisLeaseScript.Run(ctx, r.client, []string{key}, "break", holder).Int64()
	if err != nil {
		return false, r.fail("lease break", credential, err)
	}
	return n == 1, nil
}
