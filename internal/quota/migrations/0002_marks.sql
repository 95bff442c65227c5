-- quota_exhausted holds MarkExhausted's marks: per credential, the
-- credential's (site '') and each call site's whose own Google bucket is
-- spent (site = its name), until Unix µs, and why (the answer, one line).
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
