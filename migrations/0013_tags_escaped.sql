-- 0013_tags_escaped: a tag may hold any text: inside a tag a backslash is
-- written '\\' and a newline '\n' (store joinTags). Stored tags hold no
-- newline: only their backslashes are doubled (the FTS triggers re-index).
UPDATE videos SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
UPDATE video_texts SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
