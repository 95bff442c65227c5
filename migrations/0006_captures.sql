-- Captures and entries (docs/design.md §6): an entry is six integers, 48 B with every index.
CREATE TABLE captures (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs (id),
    region      TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('chart','search','category')),
    query       TEXT    NOT NULL DEFAULT '' CHECK ((kind = 'chart') = (query = '')),
    captured_at TEXT    NOT NULL,
    complete    INTEGER NOT NULL DEFAULT 0 CHECK (complete IN (0, 1)),
    UNIQUE (run_id, region, kind, query)
);
CREATE INDEX captures_region_at ON captures (region, kind, query, captured_at);

CREATE TABLE entries (
    capture_id    INTEGER NOT NULL REFERENCES captures (id) ON DELETE CASCADE,
    rank          INTEGER NOT NULL CHECK (rank >= 1),
    video         INTEGER NOT NULL REFERENCES videos (rowid),
    view_count    INTEGER,
    like_count    INTEGER,
    comment_count INTEGER,
    PRIMARY KEY (capture_id, rank)
) WITHOUT ROWID;

CREATE TABLE stats_samples (
    video         INTEGER NOT NULL REFERENCES videos (rowid),
    sampled_at    TEXT    NOT NULL,
    view_count    INTEGER,
    like_count    INTEGER,
    comment_count INTEGER,
    PRIMARY KEY (video, sampled_at)
) WITHOUT ROWID;

-- Snapshots become captures (complete when the run succeeded), statistics unknown.
INSERT INTO captures (run_id, region, kind, query, captured_at, complete)
SELECT s.run_id, s.region, s.kind, s.query, min(s.captured_at), r.outcome = 'success'
FROM snapshots s JOIN runs r ON r.id = s.run_id
GROUP BY s.run_id, s.region, s.kind, s.query
ORDER BY min(s.captured_at), s.run_id, s.region, s.kind, s.query;

INSERT INTO entries (capture_id, rank, video)
SELECT c.id, s.rank, v.rowid
FROM snapshots s
JOIN captures c ON c.run_id = s.run_id AND c.region = s.region AND c.kind = s.kind AND c.query = s.query
JOIN videos v ON v.id = s.video_id
ORDER BY c.id, s.rank;

DROP TABLE snapshots;

-- A video's history, search's region filter and the videos foreign key.
CREATE INDEX entries_video ON entries (video);
