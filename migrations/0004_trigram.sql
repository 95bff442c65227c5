-- Substring index over titles and channel titles (docs/design.md §6).
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

CREATE TRIGGER videos_tri_au AFTER UPDATE ON videos
WHEN old.title IS NOT new.title
  OR old.channel_title IS NOT new.channel_title
BEGIN
    INSERT INTO videos_tri (videos_tri, rowid, title, channel_title)
    VALUES ('delete', old.rowid, old.title, old.channel_title);
    INSERT INTO videos_tri (rowid, title, channel_title)
    VALUES (new.rowid, new.title, new.channel_title);
END;

INSERT INTO videos_tri (videos_tri) VALUES ('rebuild');
