-- Runs are listed by start time (docs/design.md §5): a copied run keeps its time, not its id.
CREATE INDEX runs_started ON runs (started_at, id);
CREATE INDEX runs_region_started ON runs (region, started_at, id);
DROP INDEX runs_region_id;
