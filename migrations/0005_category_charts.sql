-- Kind 'category' (query = the videoCategoryId): the CHECKs change, so the table is rebuilt.
CREATE TABLE snapshots_new (
    run_id      INTEGER NOT NULL REFERENCES runs (id),
    region      TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT 'chart' CHECK (kind IN ('chart','search','category')),
    query       TEXT    NOT NULL DEFAULT '' CHECK ((kind = 'chart') = (query = '')),
    rank        INTEGER NOT NULL CHECK (rank >= 1),
    video_id    TEXT    NOT NULL REFERENCES videos (id),
    captured_at TEXT    NOT NULL,
    PRIMARY KEY (run_id, region, kind, query, rank)
) WITHOUT ROWID;
INSERT INTO snapshots_new (run_id, region, kind, query, rank, video_id, captured_at)
SELECT run_id, region, kind, query, rank, video_id, captured_at FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_new RENAME TO snapshots;
CREATE INDEX snapshots_video_region ON snapshots (video_id, region);
