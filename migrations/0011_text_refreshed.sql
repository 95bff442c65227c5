ALTER TABLE videos ADD COLUMN text_refreshed_at TEXT;
