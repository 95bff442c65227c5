-- quota_exhausted: MarkExhausted's marks per credential and call site ('':
-- the credential's), until Unix µs, and why.
CREATE TABLE quota_exhausted_0002 (
	credential TEXT    NOT NULL,
	site       TEXT    NOT NULL DEFAULT '',
	until_us   INTEGER NOT NULL,
	why        TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (credential, site)
) WITHOUT ROWID;
INSERT INTO quota_exhausted_0002 (credential, until_us, why)
	SELECT credential, until_us, '403 quotaExceeded' FROM quota_exhausted;
DROP TABLE quota_exhausted;
ALTER TABLE quota_exhausted_0002 RENAME TO quota_exhausted;
