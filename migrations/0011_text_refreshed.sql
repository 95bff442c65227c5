-- 0011_text_refreshed: when a video's text was last refreshed with
-- videos.list id= outside a capture (store.policy amended: text older than
-- 30 days is refreshed, or removed leaving the id). NULL: never refreshed;
-- the text's age is then its last capture's.
ALTER TABLE videos ADD COLUMN text_refreshed_at TEXT;
