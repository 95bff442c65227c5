-- 0009_text_versions: video text as captured (issue 23, docs/design.md §6). Each
-- change of a video's title, description, tags, channel title, category or
-- thumbnail is a new version; every capture entry refers to the version in
-- force when it was captured, so an export of an old capture writes the
-- text of that day, not the newest.
--
-- Each text is stored once: the current version stays in videos (the FTS
-- indexes read it from there), superseded versions move to video_texts.
-- videos.text_version numbers the current version (0 for the first);
-- entries.text is the version an entry saw. The entry costs one header byte
-- and no payload for versions 0 and 1 (SQLite's serial types 8 and 9), one
-- byte up to 127.

-- text_since: when the current version was first captured (NULL: since
-- first_seen_at, i.e. version 0).
ALTER TABLE videos ADD COLUMN text_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE videos ADD COLUMN text_since TEXT;

-- video_texts: superseded versions, keyed (video, version). since is when
-- the version was first captured (NULL: the video's first_seen_at). A rowid
-- table: rows carry whole descriptions, too wide for WITHOUT ROWID.
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

-- Existing entries saw the current text: version 0, the default.
ALTER TABLE entries ADD COLUMN text INTEGER NOT NULL DEFAULT 0;

-- A new current version (the upsert in store/videos.go bumps text_version
-- when the text differs) moves the old one to video_texts first.
CREATE TRIGGER videos_texts_au AFTER UPDATE OF text_version ON videos
WHEN old.text_version IS NOT new.text_version
BEGIN
    INSERT INTO video_texts (video, version, title, description, channel_title, category_id, tags, thumbnail_url, since)
    VALUES (old.rowid, old.text_version, old.title, old.description, old.channel_title, old.category_id, old.tags,
            old.thumbnail_url, old.text_since);
END;
