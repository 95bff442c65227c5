-- snapshots gains "query" (search hits of each q): a primary key cannot change in place, so rebuilt.
CREATE TABLE snapshots_new (
    run_id      INTEGER NOT NULL REFERENCES runs (id),
    region      TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT 'chart' CHECK (kind IN ('chart','search')),
    query       TEXT    NOT NULL DEFAULT '' CHECK (kind = 'search' OR query = ''),
    rank        INTEGER NOT NULL CHECK (rank >= 1),
    video_id    TEXT    NOT NULL REFERENCES videos (id),
    captured_at TEXT    NOT NULL,
    PRIMARY KEY (run_id, region, kind, query, rank)
) WITHOUT ROWID;
INSERT INTO snapshots_new (run_id, region, kind, query, rank, video_id, captured_at)
SELECT run_id, region, kind, '', rank, video_id, captured_at FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_new RENAME TO snapshots;
CREATE INDEX snapshots_video_region ON snapshots (video_id, region);

-- A channel the API did not return is stored with empty fields (not asked for again).
CREATE TABLE channels (
    id               TEXT    PRIMARY KEY,      -- YouTube channel id (UC...)
    title            TEXT    NOT NULL DEFAULT '',
    country          TEXT    NOT NULL DEFAULT '',
    subscriber_count INTEGER,
    video_count      INTEGER,
    view_count       INTEGER,
    fetched_at       TEXT    NOT NULL
) WITHOUT ROWID;

ALTER TABLE runs ADD COLUMN calls TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(calls));
