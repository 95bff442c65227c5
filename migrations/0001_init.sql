-- 0001_init: core tables. Timestamps are UTC text, fixed width
-- ("2006-01-02T15:04:05.000000Z"), so they sort and compare as text.

-- videos: one row per YouTube video, upserted by id (latest text wins).
-- "rowid" is an explicit INTEGER PRIMARY KEY alias so that it is stable: the
-- FTS5 external-content index (0002) refers to rows by rowid, and an implicit
-- rowid may be renumbered by VACUUM. Upserts use ON CONFLICT(id) DO UPDATE,
-- which keeps the rowid (INSERT OR REPLACE would delete and re-insert).
--
-- Statistics live in video_stats: they change on every capture while the
-- text rarely does. Keeping them out of these wide rows (~1 KB with the
-- description) means re-storing a chart of known videos rewrites a few
-- narrow stats pages instead of one wide page per video (docs/design.md §6: storing
-- known videos must not cost more than storing new ones).
CREATE TABLE videos (
    rowid         INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,       -- YouTube video id
    title         TEXT    NOT NULL DEFAULT '',
    description   TEXT    NOT NULL DEFAULT '',
    channel_id    TEXT    NOT NULL DEFAULT '',
    channel_title TEXT    NOT NULL DEFAULT '',
    category_id   TEXT    NOT NULL DEFAULT '',
    tags          TEXT    NOT NULL DEFAULT '',   -- tags joined with '\n'
    published_at  TEXT,                          -- NULL when unknown
    duration      TEXT,                          -- ISO 8601 (PT4M13S), NULL when unknown
    thumbnail_url TEXT    NOT NULL DEFAULT '',
    first_seen_at TEXT    NOT NULL
);

-- video_stats: the latest statistics of each video (1:1 with videos).
CREATE TABLE video_stats (
    video_rowid   INTEGER PRIMARY KEY REFERENCES videos (rowid) ON DELETE CASCADE,
    view_count    INTEGER,                       -- NULL when the API omitted it
    like_count    INTEGER,
    comment_count INTEGER,
    last_seen_at  TEXT    NOT NULL               -- latest capture
);

-- runs: one row per `trendfetch run` of one region (docs/design.md §5).
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    credential     TEXT    NOT NULL DEFAULT '',
    region         TEXT    NOT NULL,
    started_at     TEXT    NOT NULL,
    finished_at    TEXT,                           -- NULL while running
    pages          INTEGER NOT NULL DEFAULT 0,
    videos         INTEGER NOT NULL DEFAULT 0,
    units          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(units)), -- {"bucket": units}
    unmetered      INTEGER NOT NULL DEFAULT 0,     -- calls made fail-open, unmetered
    outcome        TEXT    NOT NULL DEFAULT 'running'
                   CHECK (outcome IN ('running','success','denied','failed','interrupted','abandoned')),
    reason         TEXT    NOT NULL DEFAULT '',
    retry_after_ms INTEGER,                        -- set on a quota denial
    retry_at       TEXT,
    pid            INTEGER,
    host           TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX runs_region_id ON runs (region, id);

-- snapshots: one row per (run, region, kind, rank): what the chart looked like.
CREATE TABLE snapshots (
    run_id      INTEGER NOT NULL REFERENCES runs (id),
    region      TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT 'chart',  -- later also 'search'
    rank        INTEGER NOT NULL CHECK (rank >= 1),
    video_id    TEXT    NOT NULL REFERENCES videos (id),
    captured_at TEXT    NOT NULL,
    PRIMARY KEY (run_id, region, kind, rank)
) WITHOUT ROWID;
-- Serves the region filter of search (EXISTS ... video_id = ? AND region = ?)
-- and the foreign key check when videos are deleted.
CREATE INDEX snapshots_video_region ON snapshots (video_id, region);

-- categories: videoCategories.list per region.
CREATE TABLE categories (
    region     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    assignable INTEGER NOT NULL DEFAULT 0,
    fetched_at TEXT    NOT NULL,
    PRIMARY KEY (region, id)
) WITHOUT ROWID;
