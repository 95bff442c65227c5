-- A search reads the whole pending list of each GIN index it uses, up to gin_pending_list_limit
-- (4 MB by default, about 450 pages at 200,000 videos): bounded at 128 kB, new videos' words are
-- still merged into the indexes in batches, by the insert that fills the list (docs/design.md §10a).
ALTER INDEX video_search_doc SET (gin_pending_list_limit = 128);
ALTER INDEX video_search_tri SET (gin_pending_list_limit = 128);
