-- quota_shadow: per credential, shadow bucket and call site, the admitted
-- calls the shadow bucket would have denied in the Pacific day starting at
-- day_us (docs/quota.md, "Shadow buckets").
CREATE TABLE quota_shadow (
	credential TEXT    NOT NULL,
	bucket     TEXT    NOT NULL,
	site       TEXT    NOT NULL,
	day_us     INTEGER NOT NULL,
	denials    INTEGER NOT NULL,
	PRIMARY KEY (credential, bucket, site)
) WITHOUT ROWID;
