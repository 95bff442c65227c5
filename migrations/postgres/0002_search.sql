-- videos_fts and videos_tri on PostgreSQL (docs/design.md §10a). Each column's
-- positions start at a base, so no phrase spans two columns.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- search_fold folds as FTS5 does (lower case, no combining diacritics, final
-- sigma as sigma; nothing composed); ASCII is only lower-cased (10x faster).
CREATE FUNCTION search_fold(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(t) = char_length(t) THEN lower(t COLLATE "und-x-icu") ELSE
    replace(CASE WHEN t IS NFC NORMALIZED
        THEN normalize(regexp_replace(normalize(lower(t COLLATE "und-x-icu"), NFD), '[\u0300-\u036f]+', '', 'g'), NFC)
        ELSE regexp_replace(lower(t COLLATE "und-x-icu"), '[\u0300-\u036f]+', '', 'g')
    END, 'ς', 'σ') END
$$;

-- search_tokens: t's words as unicode61 cuts them (SQLite's Unicode tables),
-- folded. Not STRICT: only a set-returning function that is not is inlined.
CREATE FUNCTION search_tokens(t text) RETURNS TABLE (word text, n bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT w.m[1], w.n FROM regexp_matches(search_fold(t),
        '[\u0030-\u0039\u0041-\u005a\u0061-\u007a\u00aa\u00b2-\u00b3\u00b5\u00b9-\u00ba\u00bc-\u00be\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02c1\u02c6-\u02d1\u02e0-\u02e4\u02ec\u02ee\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d-\u032e\u0330-\u0331\u0370-\u0374\u0376-\u037d\u037f-\u0383\u0386\u0388-\u03f5\u03f7-\u0481\u048a-\u0559\u0560-\u0588\u058b-\u058e\u0590\u05c8-\u05f2\u05f5-\u05ff\u0605\u061c-\u061d\u0620-\u064a\u0660-\u0669\u066e-\u066f\u0671-\u06d3\u06d5\u06e5-\u06e6\u06ee-\u06fc\u06ff\u070e\u0710\u0712-\u072f\u074b-\u07a5\u07b1-\u07ea\u07f4-\u07f5\u07fa-\u0815\u081a\u0824\u0828\u082e-\u082f\u083f-\u0858\u085c-\u085d\u085f-\u08e3\u08ff\u0904-\u0939\u093d\u0950\u0958-\u0961\u0966-\u096f\u0971-\u0980\u0984-\u09bb\u09bd\u09c5-\u09c6\u09c9-\u09ca\u09ce-\u09d6\u09d8-\u09e1\u09e4-\u09f1\u09f4-\u09f9\u09fc-\u0a00\u0a04-\u0a3b\u0a3d\u0a43-\u0a46\u0a49-\u0a4a\u0a4e-\u0a50\u0a52-\u0a6f\u0a72-\u0a74\u0a76-\u0a80\u0a84-\u0abb\u0abd\u0ac6\u0aca\u0ace-\u0ae1\u0ae4-\u0aef\u0af2-\u0b00\u0b04-\u0b3b\u0b3d\u0b45-\u0b46\u0b49-\u0b4a\u0b4e-\u0b55\u0b58-\u0b61\u0b64-\u0b6f\u0b71-\u0b81\u0b83-\u0bbd\u0bc3-\u0bc5\u0bc9\u0bce-\u0bd6\u0bd8-\u0bf2\u0bfb-\u0c00\u0c04-\u0c3d\u0c45\u0c49\u0c4e-\u0c54\u0c57-\u0c61\u0c64-\u0c7e\u0c80-\u0c81\u0c84-\u0cbb\u0cbd\u0cc5\u0cc9\u0cce-\u0cd4\u0cd7-\u0ce1\u0ce4-\u0d01\u0d04-\u0d3d\u0d45\u0d49\u0d4e-\u0d56\u0d58-\u0d61\u0d64-\u0d78\u0d7a-\u0d81\u0d84-\u0dc9\u0dcb-\u0dce\u0dd5\u0dd7\u0de0-\u0df1\u0df5-\u0e30\u0e32-\u0e33\u0e3b-\u0e3e\u0e40-\u0e46\u0e50-\u0e59\u0e5c-\u0eb0\u0eb2-\u0eb3\u0eba\u0ebd-\u0ec7\u0ece-\u0f00\u0f20-\u0f33\u0f40-\u0f70\u0f88-\u0f8c\u0f98\u0fbd\u0fcd\u0fdb-\u102a\u103f-\u1049\u1050-\u1055\u105a-\u105d\u1061\u1065-\u1066\u106e-\u1070\u1075-\u1081\u108e\u1090-\u1099\u10a0-\u10fa\u10fc-\u135c\u1369-\u138f\u139a-\u13ff\u1401-\u166c\u166f-\u167f\u1681-\u169a\u169d-\u16ea\u16ee-\u1711\u1715-\u1731\u1737-\u1751\u1754-\u1771\u1774-\u17b3\u17d7\u17dc\u17de-\u17ff\u180f-\u18a8\u18aa-\u191f\u192c-\u192f\u193c-\u193f\u1941-\u1943\u1946-\u19af\u19c1-\u19c7\u19ca-\u19dd\u1a00-\u1a16\u1a1c-\u1a1d\u1a20-\u1a54\u1a5f\u1a7d-\u1a7e\u1a80-\u1a9f\u1aa7\u1aae-\u1aff\u1b05-\u1b33\u1b45-\u1b59\u1b7d-\u1b7f\u1b83-\u1ba0\u1bae-\u1be5\u1bf4-\u1bfb\u1c00-\u1c23\u1c38-\u1c3a\u1c40-\u1c7d\u1c80-\u1cbf\u1cc8-\u1ccf\u1ce9-\u1cec\u1cee-\u1cf1\u1cf5-\u1dbf\u1de7-\u1dfb\u1e00-\u1fbc\u1fbe\u1fc2-\u1fcc\u1fd0-\u1fdc\u1fe0-\u1fec\u1ff0-\u1ffc\u1fff\u2065-\u2069\u2070-\u2079\u207f-\u2089\u208f-\u209f\u20ba-\u20cf\u20f1-\u20ff\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2139\u213c-\u213f\u2145-\u2149\u214e\u2150-\u218f\u23f4-\u23ff\u2427-\u243f\u244b-\u249b\u24ea-\u24ff\u2700\u2776-\u2793\u2b4d-\u2b4f\u2b5a-\u2ce4\u2ceb-\u2cee\u2cf2-\u2cf8\u2cfd\u2d00-\u2d6f\u2d71-\u2d7e\u2d80-\u2ddf\u2e2f\u2e3c-\u2e7f\u2e9a\u2ef4-\u2eff\u2fd6-\u2fef\u2ffc-\u2fff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c\u3040-\u3098\u309d-\u309f\u30a1-\u30fa\u30fc-\u318f\u3192-\u3195\u31a0-\u31bf\u31e4-\u31ff\u321f-\u3229\u3248-\u324f\u3251-\u325f\u3280-\u3289\u32b1-\u32bf\u32ff\u3400-\u4dbf\u4e00-\ua48f\ua4c7-\ua4fd\ua500-\ua60c\ua610-\ua66e\ua67f-\ua69e\ua6a0-\ua6ef\ua6f8-\ua6ff\ua717-\ua71f\ua722-\ua788\ua78b-\ua801\ua803-\ua805\ua807-\ua80a\ua80c-\ua822\ua82c-\ua835\ua83a-\ua873\ua878-\ua87f\ua882-\ua8b3\ua8c5-\ua8cd\ua8d0-\ua8df\ua8f2-\ua8f7\ua8fb-\ua925\ua930-\ua946\ua954-\ua95e\ua960-\ua97f\ua984-\ua9b2\ua9ce-\ua9dd\ua9e0-\uaa28\uaa37-\uaa42\uaa44-\uaa4b\uaa4e-\uaa5b\uaa60-\uaa76\uaa7a\uaa7c-\uaaaf\uaab1\uaab5-\uaab6\uaab9-\uaabd\uaac0\uaac2-\uaadd\uaae0-\uaaea\uaaf2-\uaaf4\uaaf7-\uabe2\uabee-\ud7ff\ue000-\ufb1d\ufb1f-\ufb28\ufb2a-\ufbb1\ufbc2-\ufd3d\ufd40-\ufdfb\ufdfe-\ufdff\ufe1a-\ufe1f\ufe27-\ufe2f\ufe53\ufe67\ufe6c-\ufefe\uff00\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff66-\uffdf\uffe7\uffef-\ufff8\U00010000-\U000100ff\U00010103-\U00010136\U00010140-\U00010178\U0001018a-\U0001018f\U0001019c-\U000101cf\U000101fe-\U0001039e\U000103a0-\U000103cf\U000103d1-\U00010856\U00010858-\U0001091e\U00010920-\U0001093e\U00010940-\U00010a00\U00010a04\U00010a07-\U00010a0b\U00010a10-\U00010a37\U00010a3b-\U00010a3e\U00010a40-\U00010a4f\U00010a59-\U00010a7e\U00010a80-\U00010b38\U00010b40-\U00010fff\U00011003-\U00011037\U0001104e-\U0001107f\U00011083-\U000110af\U000110c2-\U000110ff\U00011103-\U00011126\U00011135-\U0001113f\U00011144-\U0001117f\U00011183-\U000111b2\U000111c1-\U000111c4\U000111c9-\U000116aa\U000116b8-\U0001246f\U00012474-\U00016f50\U00016f7f-\U00016f8e\U00016f93-\U0001cfff\U0001d0f6-\U0001d0ff\U0001d127-\U0001d128\U0001d1de-\U0001d1ff\U0001d246-\U0001d2ff\U0001d357-\U0001d6c0\U0001d6c2-\U0001d6da\U0001d6dc-\U0001d6fa\U0001d6fc-\U0001d714\U0001d716-\U0001d734\U0001d736-\U0001d74e\U0001d750-\U0001d76e\U0001d770-\U0001d788\U0001d78a-\U0001d7a8\U0001d7aa-\U0001d7c2\U0001d7c4-\U0001eeef\U0001eef2-\U0001efff\U0001f02c-\U0001f02f\U0001f094-\U0001f09f\U0001f0af-\U0001f0b0\U0001f0bf-\U0001f0c0\U0001f0d0\U0001f0e0-\U0001f10f\U0001f12f\U0001f16c-\U0001f16f\U0001f19b-\U0001f1e5\U0001f203-\U0001f20f\U0001f23b-\U0001f23f\U0001f249-\U0001f24f\U0001f252-\U0001f2ff\U0001f321-\U0001f32f\U0001f336\U0001f37d-\U0001f37f\U0001f394-\U0001f39f\U0001f3c5\U0001f3cb-\U0001f3df\U0001f3f1-\U0001f3ff\U0001f43f\U0001f441\U0001f4f8\U0001f4fd-\U0001f4ff\U0001f53e-\U0001f53f\U0001f544-\U0001f54f\U0001f568-\U0001f5fa\U0001f641-\U0001f644\U0001f650-\U0001f67f\U0001f6c6-\U0001f6ff\U0001f774-\U000e0000\U000e0002-\U000e001f\U000e0080-\U000e00ff\U000e01f0-\U0010ffff]+',
        'g') WITH ORDINALITY AS w(m, n)
$$;

-- search_doc: 'word':position+weight, capped at tsvector's 16383; one
-- statement for the four columns (a call per column cost a third more).
CREATE FUNCTION search_doc(title text, channel_title text, tags text, description text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg('''' || replace(replace(w.word, '\', '\\'), '''', '''''')
                               || ''':' || least(c.base + w.n, 16383) || c.weight, ' '), '')::tsvector
    FROM (VALUES (title, 0, 'A'), (channel_title, 1000, 'B'), (tags, 2000, 'C'), (description, 4000, 'D'))
         AS c(t, base, weight), search_tokens(c.t) AS w
    WHERE octet_length(w.word) < 2048
$$;

CREATE TABLE video_search (
    video_rowid BIGINT PRIMARY KEY REFERENCES videos (rowid) ON DELETE CASCADE,
    doc         tsvector NOT NULL,
    tri         TEXT     NOT NULL
);
CREATE INDEX video_search_doc ON video_search USING gin (doc);
CREATE INDEX video_search_tri ON video_search USING gin (tri gin_trgm_ops);

CREATE FUNCTION video_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO video_search (video_rowid, doc, tri)
    VALUES (NEW.rowid, search_doc(NEW.title, NEW.channel_title, NEW.tags, NEW.description),
            search_fold(NEW.title || E'\n' || NEW.channel_title))
    ON CONFLICT (video_rowid) DO UPDATE SET doc = EXCLUDED.doc, tri = EXCLUDED.tri;
    RETURN NULL;
END
$$;
-- New videos are indexed once per statement (a row trigger doubled the cost).
CREATE FUNCTION video_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO video_search (video_rowid, doc, tri)
    SELECT rowid, search_doc(title, channel_title, tags, description), search_fold(title || E'\n' || channel_title)
    FROM new_videos
    ON CONFLICT (video_rowid) DO UPDATE SET doc = EXCLUDED.doc, tri = EXCLUDED.tri;
    RETURN NULL;
END
$$;
CREATE TRIGGER videos_search_ai AFTER INSERT ON videos REFERENCING NEW TABLE AS new_videos
FOR EACH STATEMENT EXECUTE FUNCTION video_search_insert();
CREATE TRIGGER videos_search_au AFTER UPDATE OF title, tags, channel_title, description ON videos
FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title
                OR OLD.tags IS DISTINCT FROM NEW.tags
                OR OLD.channel_title IS DISTINCT FROM NEW.channel_title
                OR OLD.description IS DISTINCT FROM NEW.description)
EXECUTE FUNCTION video_search_sync();

INSERT INTO video_search (video_rowid, doc, tri)
SELECT rowid, search_doc(title, channel_title, tags, description), search_fold(title || E'\n' || channel_title)
FROM videos;
