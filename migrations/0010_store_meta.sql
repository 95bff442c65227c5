-- 0010_store_meta: facts about the database itself, key -> value.
--
-- legacy_data = '1' marks a database that already held captures or
-- statistics samples when store.policy was introduced (issue 23): with
-- store.policy unset it keeps everything (and runs warn), since an existing
-- database is never pruned by a new default. A database created since gets
-- the default policy, youtube.
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO store_meta (key, value)
SELECT 'legacy_data', '1'
WHERE EXISTS (SELECT 1 FROM captures) OR EXISTS (SELECT 1 FROM stats_samples);
