-- sqlitedb: foreign_keys off
-- 'success_unmetered' iff unmetered > 0 (docs/design.md §4); runs rebuilt as SQLite documents.
CREATE TABLE runs_new (
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
                   CHECK (outcome IN ('running','success','success_unmetered','denied','failed','interrupted','abandoned')),
    reason         TEXT    NOT NULL DEFAULT '',
    retry_after_ms INTEGER,                        -- set on a quota denial
    retry_at       TEXT,
    pid            INTEGER,
    host           TEXT    NOT NULL DEFAULT '',
    calls          TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(calls)), -- {"videos.list": 4}
    CHECK (outcome NOT IN ('success','success_unmetered') OR (outcome = 'success_unmetered') = (unmetered > 0))
);
INSERT INTO runs_new (id, credential, region, started_at, finished_at, pages, videos, units, unmetered,
                      outcome, reason, retry_after_ms, retry_at, pid, host, calls)
SELECT id, credential, region, started_at, finished_at, pages, videos, units, unmetered,
       CASE WHEN outcome = 'success' AND unmetered > 0 THEN 'success_unmetered' ELSE outcome END,
       reason, retry_after_ms, retry_at, pid, host, calls
FROM runs ORDER BY id;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_region_id ON runs (region, id);
