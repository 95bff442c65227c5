CREATE TABLE category_fetches (
    region     TEXT PRIMARY KEY,
    fetched_at TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO category_fetches (region, fetched_at)
SELECT region, max(fetched_at) FROM categories GROUP BY region;
