-- 0003_ingest: what the complete ingestion run (issue 4) stores besides the
-- chart: search-hit snapshots, channels, API calls per method on runs.

-- snapshots gains "query": search hits of several search.list queries in one
-- run each have their own ranks 1..n. kind is 'chart' (query '') or
-- 'search' (query = the search.list q). SQLite cannot change a primary key
-- in place, so the table is rebuilt; nothing references snapshots.
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
-- As in 0001: the region filter of search and the videos foreign key.
CREATE INDEX snapshots_video_region ON snapshots (video_id, region);

-- channels: channels.list, upserted by id. Counts are NULL when the API hides
-- or omits them (hiddenSubscriberCount). fetched_at drives the refresh
-- (channels.refresh, default 24 h); a channel the API did not return may be
-- stored with empty fields so that it is not asked for again until then.
CREATE TABLE channels (
    id               TEXT    PRIMARY KEY,      -- YouTube channel id (UC...)
    title            TEXT    NOT NULL DEFAULT '',
    country          TEXT    NOT NULL DEFAULT '',
    subscriber_count INTEGER,
    video_count      INTEGER,
    view_count       INTEGER,
    fetched_at       TEXT    NOT NULL
) WITHOUT ROWID;

-- runs.calls: API calls sent per method, {"videos.list": 4}.
ALTER TABLE runs ADD COLUMN calls TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(calls));
