-- quota.db: the logs of the embedded backend (sqlite.go), its exhaustion
-- markers and its run leases.
--
-- quota_log: one row per admitted call per bucket. ts_us is the local
-- clock in µs (never decreasing along cum); cum and seq are the running
-- totals of cost and entries, so the rows of a window are a contiguous
-- range; rid is a random id, the entry's identity for Refund.
-- quota_exhausted: MarkExhausted's marker per credential (Unix µs).
-- leases: name = leaseName(credential, region), the holder's token and
-- description, expires_us = Unix µs at which the lease stops counting.
--
-- A quota.db written before numbered migrations (PRAGMA user_version 1 to
-- 4, no schema_migrations) is rebuilt here in place: its entries keep
-- counting; their rid becomes 0, which no refund matches (the safe side).
CREATE TABLE IF NOT EXISTS quota_log (
	credential TEXT    NOT NULL,
	bucket     TEXT    NOT NULL,
	cum        INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	ts_us      INTEGER NOT NULL,
	cost       INTEGER NOT NULL,
	PRIMARY KEY (credential, bucket, cum)
) WITHOUT ROWID;
CREATE TABLE quota_log_0001 (
	credential TEXT    NOT NULL,
	bucket     TEXT    NOT NULL,
	cum        INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	ts_us      INTEGER NOT NULL,
	cost       INTEGER NOT NULL,
	rid        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (credential, bucket, cum)
) WITHOUT ROWID;
INSERT INTO quota_log_0001 (credential, bucket, cum, seq, ts_us, cost)
	SELECT credential, bucket, cum, seq, ts_us, cost FROM quota_log;
DROP TABLE quota_log;
ALTER TABLE quota_log_0001 RENAME TO quota_log;
CREATE INDEX quota_log_window ON quota_log (credential, bucket, ts_us);
CREATE TABLE IF NOT EXISTS quota_exhausted (
	credential TEXT    NOT NULL PRIMARY KEY,
	until_us   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
	name       TEXT    NOT NULL PRIMARY KEY,
	token      TEXT    NOT NULL,
	holder     TEXT    NOT NULL,
	expires_us INTEGER NOT NULL
) WITHOUT ROWID;
DROP TABLE IF EXISTS quota_counter;
-- Binaries before numbered migrations read user_version: 4 is current to them.
PRAGMA user_version = 4;
