-- Per shadow bucket and call site, the admitted calls it would have denied (docs/quota.md); NULL: none.
ALTER TABLE runs ADD COLUMN shadow_denials TEXT CHECK (shadow_denials IS NULL OR shadow_denials::jsonb IS NOT NULL);
