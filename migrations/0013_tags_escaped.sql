-- 0013_tags_escaped: inside a tag a backslash is written '\\' and a newline
-- '\n' (store joinTags); stored tags hold no newline, so backslashes double.
UPDATE videos SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
UPDATE video_texts SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
