-- 0007_category_fetches: when videoCategories.list was last fetched for a
-- region, kept apart from the categories themselves, so that an empty answer
-- (a region with no categories) is cached for categories.refresh like any
-- other instead of being fetched again on every run. Seeded from the
-- categories already stored.
CREATE TABLE category_fetches (
    region     TEXT PRIMARY KEY,
    fetched_at TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO category_fetches (region, fetched_at)
SELECT region, max(fetched_at) FROM categories GROUP BY region;
