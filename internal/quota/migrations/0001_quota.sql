-- quota.db: the embedded backend's logs (quota_log: running totals cum and
-- seq, rid the entry's identity for Refund), marks and run leases
-- (docs/quota.md, "Data layout"). A quota.db written before numbered
-- migrations (user_version 1 to 4) is rebuilt in place; its rids become 0.
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
