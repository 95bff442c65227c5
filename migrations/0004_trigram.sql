-- 0004_trigram: a substring index over titles and channel titles, for
-- scripts the unicode61 index of 0002 cannot split into words (Japanese and
-- Chinese have no spaces; Korean words carry attached particles) and for
-- parts of words in any script. Store.Search decides which index answers a
-- query (see search.go). The trigram tokenizer indexes every 3-character
-- window, folded to lower case and without diacritics, so a MATCH string of
-- 3 or more characters finds every row containing it. Full detail is needed:
-- a string is matched as a phrase of its trigrams.
--
-- External content like videos_fts. Column order matters: Search ranks with
-- bm25(videos_tri, 10.0, 3.0) = title, channel_title.
CREATE VIRTUAL TABLE videos_tri USING fts5 (
    title, channel_title,
    content = 'videos',
    content_rowid = 'rowid',
    tokenize = 'trigram remove_diacritics 1'
);

CREATE TRIGGER videos_tri_ai AFTER INSERT ON videos BEGIN
    INSERT INTO videos_tri (rowid, title, channel_title)
    VALUES (new.rowid, new.title, new.channel_title);
END;

CREATE TRIGGER videos_tri_ad AFTER DELETE ON videos BEGIN
    INSERT INTO videos_tri (videos_tri, rowid, title, channel_title)
    VALUES ('delete', old.rowid, old.title, old.channel_title);
END;

-- Guarded like videos_fts_au: only a changed title or channel title is
-- re-indexed (statistics-only upserts never reach this table).
CREATE TRIGGER videos_tri_au AFTER UPDATE ON videos
WHEN old.title IS NOT new.title
  OR old.channel_title IS NOT new.channel_title
BEGIN
    INSERT INTO videos_tri (videos_tri, rowid, title, channel_title)
    VALUES ('delete', old.rowid, old.title, old.channel_title);
    INSERT INTO videos_tri (rowid, title, channel_title)
    VALUES (new.rowid, new.title, new.channel_title);
END;

-- Index any videos stored before this migration.
INSERT INTO videos_tri (videos_tri) VALUES ('rebuild');
