-- Tables: docs/schema.md; timestamps are fixed-width UTC text (text order is time order).
-- videos.rowid is an explicit alias: VACUUM cannot renumber the rows the FTS5 index (0002) refers to.
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

CREATE TABLE video_stats (
    video_rowid   INTEGER PRIMARY KEY REFERENCES videos (rowid) ON DELETE CASCADE,
    view_count    INTEGER,                       -- NULL when the API omitted it
    like_count    INTEGER,
    comment_count INTEGER,
    last_seen_at  TEXT    NOT NULL               -- latest capture
);

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

CREATE TABLE snapshots (
    run_id      INTEGER NOT NULL REFERENCES runs (id),
    region      TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT 'chart',  -- later also 'search'
    rank        INTEGER NOT NULL CHECK (rank >= 1),
    video_id    TEXT    NOT NULL REFERENCES videos (id),
    captured_at TEXT    NOT NULL,
    PRIMARY KEY (run_id, region, kind, rank)
) WITHOUT ROWID;
CREATE INDEX snapshots_video_region ON snapshots (video_id, region);

CREATE TABLE categories (
    region     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    assignable INTEGER NOT NULL DEFAULT 0,
    fetched_at TEXT    NOT NULL,
    PRIMARY KEY (region, id)
) WITHOUT ROWID;
