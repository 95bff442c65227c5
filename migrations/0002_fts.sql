-- 0002_fts: full-text index over videos (docs/design.md §6).
-- External content: the index stores no copy of the text, it reads it from
-- videos by rowid. Column order matters: Search ranks with
-- bm25(videos_fts, 10.0, 2.0, 3.0, 1.0) = title, tags, channel_title, description.
CREATE VIRTUAL TABLE videos_fts USING fts5 (
    title, tags, channel_title, description,
    content = 'videos',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER videos_fts_ai AFTER INSERT ON videos BEGIN
    INSERT INTO videos_fts (rowid, title, tags, channel_title, description)
    VALUES (new.rowid, new.title, new.tags, new.channel_title, new.description);
END;

CREATE TRIGGER videos_fts_ad AFTER DELETE ON videos BEGIN
    INSERT INTO videos_fts (videos_fts, rowid, title, tags, channel_title, description)
    VALUES ('delete', old.rowid, old.title, old.tags, old.channel_title, old.description);
END;

-- Guarded: re-upserting a known video usually changes only its statistics;
-- re-indexing unchanged text would make that slower than inserting new videos.
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

-- Index any videos stored before this migration.
INSERT INTO videos_fts (videos_fts) VALUES ('rebuild');
