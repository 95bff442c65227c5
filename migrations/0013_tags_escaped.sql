-- Tags escaped (docs/schema.md): stored tags hold no newline, so backslashes double.
UPDATE videos SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
UPDATE video_texts SET tags = replace(tags, '\', '\\') WHERE instr(tags, '\') > 0;
