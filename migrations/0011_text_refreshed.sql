-- 0011_text_refreshed: when store.policy amended last refreshed a video's
-- text outside a capture (NULL: never; its age is its last capture's).
ALTER TABLE videos ADD COLUMN text_refreshed_at TEXT;
