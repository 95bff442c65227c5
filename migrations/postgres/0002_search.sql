-- 0013_tags_escaped: a tag may hold any text, a newline included (a tag
-- with a newline came back as two tags). Tags stay joined with '\n'; inside
-- a tag a backslash is now written '\\' and a newline '\n' (two characters,
-- store/videos.go joinTags), so the separator never occurs inside one.
-- Stored tags hold no newline: only their backslashes are doubled. The
-- text-version trigger fires on text_version only; the FTS triggers
-- re-index the rows changed.
UPDATE videos SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
UPDATE video_texts SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
