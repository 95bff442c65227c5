-- Prefix indexes of 1-3 characters ("a*" reads one doclist); bm25 as rank: FTS5 sorts in the MATCH.
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
