-- Text versions (docs/design.md §6); entries.text costs no payload for versions 0 and 1.
ALTER TABLE videos ADD COLUMN text_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE videos ADD COLUMN text_since TEXT;

-- A rowid table: rows carry whole descriptions, too wide for WITHOUT ROWID.
CREATE TABLE video_texts (
    video         INTEGER NOT NULL REFERENCES videos (rowid) ON DELETE CASCADE,
    version       INTEGER NOT NULL CHECK (version >= 0),
    title         TEXT    NOT NULL,
    description   TEXT    NOT NULL,
    channel_title TEXT    NOT NULL,
    category_id   TEXT    NOT NULL,
    tags          TEXT    NOT NULL,
    thumbnail_url TEXT    NOT NULL,
    since         TEXT,
    UNIQUE (video, version)
);

ALTER TABLE entries ADD COLUMN text INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER videos_texts_au AFTER UPDATE OF text_version ON videos
WHEN old.text_version IS NOT new.text_version
BEGIN
    INSERT INTO video_texts (video, version, title, description, channel_title, category_id, tags, thumbnail_url, since)
    VALUES (old.rowid, old.text_version, old.title, old.description, old.channel_title, old.category_id, old.tags,
            old.thumbnail_url, old.text_since);
END;
