-- 0010_store_meta: facts about the database; legacy_data: it held data
-- before store.policy existed, so unset it keeps everything (docs/design.md §10).
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO store_meta (key, value)
SELECT 'legacy_data', '1'
WHERE EXISTS (SELECT 1 FROM captures) OR EXISTS (SELECT 1 FROM stats_samples);
