-- 0006_captures: trending history (issue 11, docs/design.md §6). Every chart,
-- narrowed category chart and list of search hits a run fetches is one
-- capture; each entry of a capture keeps its rank, its video and the
-- statistics of that moment. Nothing a later capture fetches overwrites them.
--
-- Compact on disk (the budget is 48 B per entry with every index): the
-- per-capture facts (run, region, kind, query, time, complete) are stored
-- once in captures; an entry is six integers in a WITHOUT ROWID table keyed
-- (capture_id, rank), so the table is its own primary-key index and there is
-- no hidden rowid; the video is videos.rowid, not the 11-character id.

-- captures: one per (run, region, kind, query). captured_at is the time its
-- first page was stored. complete is 0 while the run is fetching it and stays
-- 0 when the run stopped mid-list (denial, signal, error): a partial capture
-- never looks whole.
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
-- The capture in force at a time: latest captured_at <= T of (region, kind, query).
CREATE INDEX captures_region_at ON captures (region, kind, query, captured_at);

-- entries: one per (capture, rank). Statistics are NULL when the API omitted
-- them (hidden likes, disabled comments) or are unknown (migrated snapshots).
CREATE TABLE entries (
    capture_id    INTEGER NOT NULL REFERENCES captures (id) ON DELETE CASCADE,
    rank          INTEGER NOT NULL CHECK (rank >= 1),
    video         INTEGER NOT NULL REFERENCES videos (rowid),
    view_count    INTEGER,
    like_count    INTEGER,
    comment_count INTEGER,
    PRIMARY KEY (capture_id, rank)
) WITHOUT ROWID;

-- stats_samples: statistics of a video fetched outside a chart
-- (videos.batchGetStats of videos that left the chart), a time series.
CREATE TABLE stats_samples (
    video         INTEGER NOT NULL REFERENCES videos (rowid),
    sampled_at    TEXT    NOT NULL,
    view_count    INTEGER,
    like_count    INTEGER,
    comment_count INTEGER,
    PRIMARY KEY (video, sampled_at)
) WITHOUT ROWID;

-- The existing snapshots become captures and entries. A snapshot kept no
-- statistics, so its entries have NULL ones (unknown, never guessed). Whether
-- a list was fetched whole was not recorded: a capture counts as complete
-- when its run succeeded.
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

-- A video's history, search's region filter and the videos foreign key
-- (prune deletes videos nothing references). The key carries (capture_id,
-- rank) implicitly.
CREATE INDEX entries_video ON entries (video);
