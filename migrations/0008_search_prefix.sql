-- 0008_search_prefix: bounded search work (issue 21 item 1).
--
-- The word index gets FTS5 prefix indexes for prefixes of 1, 2 and 3
-- characters: without them "a*" merges the doclists of every indexed word
-- starting with "a" (thousands) on each lookup; with them it reads one
-- doclist. Longer prefixes match few words and need none. FTS5 cannot add
-- the option to an existing table, so videos_fts is rebuilt (same columns,
-- tokenizer and guarded triggers as 0002) and re-indexed from videos.
--
-- Both indexes get their ranking declared once, as the table's rank
-- function, so Search orders by rank and FTS5 sorts inside the MATCH query
-- (snippet() then runs only for the rows returned):
--   videos_fts: bm25 weights title 10, tags 2, channel title 3, description 1;
--   videos_tri: bm25 weights title 10, channel title 3.
DROP TRIGGER videos_fts_ai;
DROP TRIGGER videos_fts_ad;
DROP TRIGGER videos_fts_au;
DROP TABLE videos_fts;

CREATE VIRTUAL TABLE videos_fts USING fts5 (
    title, tags, channel_title, description,
    content = 'videos',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '1 2 3'
);
INSERT INTO videos_fts (videos_fts, rank) VALUES ('rank', 'bm25(10.0, 2.0, 3.0, 1.0)');

CREATE TRIGGER videos_fts_ai AFTER INSERT ON videos BEGIN
    INSERT INTO videos_fts (rowid, title, tags, channel_title, description)
    VALUES (new.rowid, new.title, new.tags, new.channel_title, new.description);
END;

CREATE TRIGGER videos_fts_ad AFTER DELETE ON videos BEGIN
    INSERT INTO videos_fts (videos_fts, rowid, title, tags, channel_title, description)
    VALUES ('delete', old.rowid, old.title, old.tags, old.channel_title, old.description);
END;

-- Guarded as in 0002: unchanged text is never re-indexed.
CREATE TRIGGER videos_fts_au AFTER UPDATE ON videos
WHEN old.title IS NOT new.title
  OR old.tags IS NOT new.tags
  OR old.channel_title IS NOT new.channel_title
  OR old.description IS NOT new.description
BEGIN
    INSERT INTO videos_fts (videos_fts, rowid, title, tags, channel_title, description)
    VALUES ('delete', old.rowid, old.title, old.tags, old.channel_title, old.description);
    INSERT INTO videos_fts (rowid, title, tags, channel_title, description)
    VALUES (new.rowid, new.title, new.tags, new.channel_title, new.description);
END;

INSERT INTO videos_fts (videos_fts) VALUES ('rebuild');

INSERT INTO videos_tri (videos_tri, rank) VALUES ('rank', 'bm25(10.0, 3.0)');
