-- quota_hold: the outage reserves' holds, per credential, bucket and reserve
-- id: units counted in every decision until until_us (docs/quota.md, "The
-- outage reserve").
CREATE TABLE quota_hold (
	credential TEXT    NOT NULL,
	bucket     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	units      INTEGER NOT NULL,
	until_us   INTEGER NOT NULL,
	PRIMARY KEY (credential, bucket, id)
) WITHOUT ROWID;
