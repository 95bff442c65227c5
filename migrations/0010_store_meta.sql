-- legacy_data: data older than store.policy, kept while it is unset (docs/design.md §10).
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO store_meta (key, value)
SELECT 'legacy_data', '1'
WHERE EXISTS (SELECT 1 FROM captures) OR EXISTS (SELECT 1 FROM stats_samples);
