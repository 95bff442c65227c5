-- 0010_store_meta: facts about the database, key -> value. legacy_data
-- marks a database that held data when store.policy was introduced: with
-- the policy unset it keeps everything (docs/design.md §10).
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO store_meta (key, value)
SELECT 'legacy_data', '1'
WHERE EXISTS (SELECT 1 FROM captures) OR EXISTS (SELECT 1 FROM stats_samples);
