-- A page's chart entries in one row (docs/design.md §10a): arrays in rank order from first_rank,
-- 40-odd bytes an entry instead of a row's 128; the GIN index finds the pages a video is on.
CREATE TABLE entry_pages (
    capture_id    BIGINT   NOT NULL REFERENCES captures (id) ON DELETE CASCADE,
    first_rank    BIGINT   NOT NULL CHECK (first_rank >= 1),
    video         BIGINT[] NOT NULL,
    view_count    BIGINT[] NOT NULL,
    like_count    BIGINT[] NOT NULL,
    comment_count BIGINT[] NOT NULL,
    text          BIGINT[] NOT NULL,
    PRIMARY KEY (capture_id, first_rank),
    -- No rank stored twice: a capture's pages do not overlap (2^20 ranks a capture).
    EXCLUDE USING gist ((int8range(capture_id * 1048576 + first_rank,
                                   capture_id * 1048576 + first_rank + cardinality(video))) WITH &&)
);

-- Runs of consecutive ranks, cut into pages of 50 as a run saves them.
INSERT INTO entry_pages
SELECT capture_id, min(rank), array_agg(video ORDER BY rank), array_agg(view_count ORDER BY rank),
       array_agg(like_count ORDER BY rank), array_agg(comment_count ORDER BY rank), array_agg(text ORDER BY rank)
FROM (SELECT e.*, rank - row_number() OVER (PARTITION BY capture_id ORDER BY rank) AS run FROM entries e) e
GROUP BY capture_id, run, (rank - 1) / 50;

DROP TABLE entries;
CREATE INDEX entry_pages_video ON entry_pages USING gin (video) WITH (fastupdate = off);

-- The entries as rows, as SQLite keeps them; page_videos lets a lookup by video use the GIN index
-- (page_videos @> ARRAY[v] AND video = v).
CREATE VIEW entries AS
SELECT p.capture_id, p.first_rank + e.i - 1 AS rank, e.video, e.view_count, e.like_count, e.comment_count, e.text,
       p.video AS page_videos
FROM entry_pages p,
     unnest(p.video, p.view_count, p.like_count, p.comment_count, p.text)
         WITH ORDINALITY AS e (video, view_count, like_count, comment_count, text, i);
