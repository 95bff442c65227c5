package quota

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Tests of the embedded backend (SQLite) that need its injected clock:
// clock steps (doc.go, "Clock steps") and refunds of entries stamped in the
// same microsecond.

// onEmbedded runs test on a fresh SQLite backend reading its own fake clock
// set to start.
func onEmbedded(t *testing.T, start time.Time, test func(t *testing.T, clock *fakeClock, b Backend)) {
	clock := newFakeClock(start)
	test(t, clock, WithClock(newTestSQLite(t), clock.Now))
}

// TestEmbeddedClockStepBack: a step back within ClockStepTolerance is
// absorbed (entries stamped at the newest one); a larger one is refused with
// Decision.ClockBehind and a Retry-After that ends exactly when the clock
// is back within the tolerance of the newest entry; nothing is written
// meanwhile.
func TestEmbeddedClockStepBack(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	onEmbedded(t, start, func(t *testing.T, clock *fakeClock, b Backend) {
		units := Bucket{Name: "units", Limit: 3, Window: time.Minute}
		other := Bucket{Name: "other", Limit: 100, Window: time.Minute}
		mustAllow(t, b, "c", charge(units, 1))

		// Within the tolerance: admitted, stamped at the newest entry.
		clock.Set(start.Add(-ClockStepTolerance))
		d := mustAllow(t, b, "c", charge(units, 1))
		if at := d.Reservation.entries[0].at; at != start.UnixMicro() || d.ClockBehind != 0 {
			t.Fatalf("within the tolerance: stamped %v, ClockBehind %v; want %v and 0", time.UnixMicro(at).UTC(), d.ClockBehind, start)
		}

		// An hour back: refused, with how far and until when.
		clock.Set(start.Add(-time.Hour))
		before := mustStatus(t, b, "c", []Bucket{units}, nil)
		d = mustDeny(t, b, "c", charge(units, 1, other, int64(1)), "units")
		if d.ClockBehind != time.Hour || d.RetryAfter != time.Hour-ClockStepTolerance {
			t.Fatalf("an hour back: ClockBehind %v, RetryAfter %v; want 1h and %v", d.ClockBehind, d.RetryAfter, time.Hour-ClockStepTolerance)
		}
		if after := mustStatus(t, b, "c", []Bucket{units}, nil); stateOf(after) != stateOf(before) {
			t.Fatalf("a refused reservation wrote:\nbefore %s\nafter  %s", stateOf(before), stateOf(after))
		}
		// A bucket without entries is not held back by the clock.
		mustAllow(t, b, "c", charge(other, 1))
		// One µs short of the tolerance: still refused; then admitted.
		clock.Set(start.Add(-ClockStepTolerance - time.Microsecond))
		if d := mustDeny(t, b, "c", charge(units, 1), "units"); d.ClockBehind != ClockStepTolerance+time.Microsecond || d.RetryAfter != time.Microsecond {
			t.Fatalf("1µs past the tolerance: ClockBehind %v, RetryAfter %v", d.ClockBehind, d.RetryAfter)
		}
		clock.Set(start.Add(-ClockStepTolerance))
		mustAllow(t, b, "c", charge(units, 1)) // the third unit
		mustDeny(t, b, "c", charge(units, 1), "units")
		// The window still ends a minute after the entries' stamps.
		clock.Set(start.Add(time.Minute - time.Microsecond))
		if d := mustDeny(t, b, "c", charge(units, 1), "units"); d.ClockBehind != 0 {
			t.Fatalf("full, clock fine: ClockBehind %v, want 0", d.ClockBehind)
		}
		clock.Set(start.Add(time.Minute))
		mustAllow(t, b, "c", charge(units, 3))
	})
}

// TestEmbeddedClockStepForward documents the other direction: a step
// forward of a day makes every entry look a day old, so a full window is
// admitted again (the local clock decides; doc.go, "Clock steps").
func TestEmbeddedClockStepForward(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	onEmbedded(t, start, func(t *testing.T, clock *fakeClock, b Backend) {
		units := Bucket{Name: "units", Limit: 3, Window: 24 * time.Hour}
		mustAllow(t, b, "c", charge(units, 3))
		mustDeny(t, b, "c", charge(units, 1), "units")
		clock.Advance(24 * time.Hour)
		mustAllow(t, b, "c", charge(units, 3))
	})
}

// TestEmbeddedRefundSameMicrosecond: with a clock that does not move, two
// reservations share a timestamp and a cost; a refund takes exactly its
// own while it is the newest, and refunding it again takes neither the
// other nor a newer twin.
func TestEmbeddedRefundSameMicrosecond(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	onEmbedded(t, start, func(t *testing.T, clock *fakeClock, b Backend) {
		units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
		used := func() int64 { return mustStatus(t, b, "c", []Bucket{units}, nil).Buckets[0].Used }
		mustAllow(t, b, "c", charge(units, 2))
		a := mustAllow(t, b, "c", charge(units, 2))
		mustRefund(t, b, "c", a.Reservation)
		mustRefund(t, b, "c", a.Reservation)
		if u := used(); u != 2 {
			t.Fatalf("used %d after refunding one of two twins twice, want 2", u)
		}
		mustAllow(t, b, "c", charge(units, 2)) // a new twin, same µs, same cost
		mustRefund(t, b, "c", a.Reservation)
		if u := used(); u != 4 {
			t.Fatalf("used %d after a third refund of the first, want 4", u)
		}
		mustAllow(t, b, "c", charge(units, 6))
		mustDeny(t, b, "c", charge(units, 1), "units")
	})
}

// oldQuotaSchemas are quota.db schemas written before numbered migrations,
// by PRAGMA user_version: 1 (no rid) and 4 (the last one, with leases).
var oldQuotaSchemas = map[int][]string{
	1: {
		`CREATE TABLE quota_log (credential TEXT NOT NULL, bucket TEXT NOT NULL, cum INTEGER NOT NULL,
			seq INTEGER NOT NULL, ts_us INTEGER NOT NULL, cost INTEGER NOT NULL,
			PRIMARY KEY (credential, bucket, cum)) WITHOUT ROWID`,
		`CREATE INDEX quota_log_window ON quota_log (credential, bucket, ts_us)`,
		`CREATE TABLE quota_exhausted (credential TEXT NOT NULL PRIMARY KEY, until_us INTEGER NOT NULL) WITHOUT ROWID`,
		`PRAGMA user_version = 1`,
	},
	4: {
		`CREATE TABLE quota_log (credential TEXT NOT NULL, bucket TEXT NOT NULL, cum INTEGER NOT NULL,
			seq INTEGER NOT NULL, ts_us INTEGER NOT NULL, cost INTEGER NOT NULL, rid INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (credential, bucket, cum)) WITHOUT ROWID`,
		`CREATE INDEX quota_log_window ON quota_log (credential, bucket, ts_us)`,
		`CREATE TABLE quota_exhausted (credential TEXT NOT NULL PRIMARY KEY, until_us INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE leases (name TEXT NOT NULL PRIMARY KEY, token TEXT NOT NULL, holder TEXT NOT NULL,
			expires_us INTEGER NOT NULL) WITHOUT ROWID`,
		`PRAGMA user_version = 4`,
	},
}

// TestSQLiteKeepsOldQuotaDB: a quota database written before numbered
// migrations keeps its entries and its usage: a read-only open reads it
// before any writer has migrated it, the first writer migrates it, its old
// entries count but are never matched by a refund, and later opens (both
// modes) find the schema current.
func TestSQLiteKeepsOldQuotaDB(t *testing.T) {
	for version, ddl := range oldQuotaSchemas {
		t.Run(fmt.Sprint("user_version ", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "quota.db")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			nowUS := time.Now().UnixMicro()
			for _, q := range ddl {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			for _, row := range [][3]int64{{3, 1, nowUS - 2000}, {7, 2, nowUS - 1000}} {
				if _, err := db.Exec(`INSERT INTO quota_log (credential, bucket, cum, seq, ts_us, cost) VALUES ('c', 'units', ?, ?, ?, ?)`,
					row[0], row[1], row[2], row[0]-(row[1]-1)*3); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			units := Bucket{Name: "units", Limit: 10, Window: time.Hour}

			ro, err := NewSQLite(path, true)
			if err != nil {
				t.Fatalf("read-only open before the migration: %v", err)
			}
			if bs := mustStatus(t, ro, "c", []Bucket{units}, nil).Buckets[0]; bs.Used != 7 || bs.Entries != 2 {
				t.Fatalf("read-only, before the migration: used %d entries %d, want 7 and 2", bs.Used, bs.Entries)
			}
			ro.Close()
			b, err := NewSQLite(path, false)
			if err != nil {
				t.Fatalf("migrating: %v", err)
			}
			t.Cleanup(func() { b.Close() })
			if bs := mustStatus(t, b, "c", []Bucket{units}, nil).Buckets[0]; bs.Used != 7 || bs.Entries != 2 {
				t.Fatalf("after the migration: used %d entries %d, want 7 and 2", bs.Used, bs.Entries)
			}
			d := mustAllow(t, b, "c", charge(units, 2))
			if d.Remaining["units"] != 1 {
				t.Fatalf("Remaining %d after the migration, want 1 (7 old units + 2)", d.Remaining["units"])
			}
			// A reservation naming an old row (rid 0) refunds nothing.
			mustRefund(t, b, "c", Reservation{entries: []reservedEntry{{bucket: units, units: 4, at: nowUS - 1000}}})
			mustRefund(t, b, "c", d.Reservation)
			if bs := mustStatus(t, b, "c", []Bucket{units}, nil).Buckets[0]; bs.Used != 7 || bs.Entries != 2 {
				t.Fatalf("after refunds: used %d entries %d, want 7 and 2 (the old rows)", bs.Used, bs.Entries)
			}
			for _, readOnly := range []bool{false, true} {
				again, err := NewSQLite(path, readOnly)
				if err != nil {
					t.Fatalf("reopening (read-only %t): %v", readOnly, err)
				}
				if bs := mustStatus(t, again, "c", []Bucket{units}, nil).Buckets[0]; bs.Used != 7 {
					t.Fatalf("reopened: used %d, want 7", bs.Used)
				}
				again.Close()
			}
		})
	}
}
