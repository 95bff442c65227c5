package youtubetest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"google.golang.org/api/youtube/v3"
)

// etagOf returns an ETag in the API's current style: 27 characters of unpadded base64url.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])[:27]
}

// writeJSON answers status with the JSON of v.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // only the youtube types and maps of strings: they always marshal
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e errorResponse) {
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	writeJSON(w, e.Error.Code, e)
}

// writeList answers resp, a pointer to a youtube list response, with items always sent and
// its etag computed from its content; 304 when the request's If-None-Match equals that etag
// (still charged; docs/design.md §3 assumes a 304 costs).
func writeList(w http.ResponseWriter, r *http.Request, resp any) {
	v := reflect.ValueOf(resp).Elem()
	v.FieldByName("ForceSendFields").Set(reflect.ValueOf([]string{"Items"}))
	b, _ := json.Marshal(resp)
	etag := etagOf(b)
	v.FieldByName("Etag").SetString(etag)
	if strings.Trim(r.Header.Get("If-None-Match"), `"`) == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// decodeKind unmarshals raw, a recorded answer, into v; its kind, when set, must be kind.
func decodeKind(raw []byte, v any, kind string) error {
	var k struct{ Kind string }
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	_ = json.Unmarshal(raw, &k) // raw is a JSON object: v decoded it
	if k.Kind != "" && k.Kind != kind {
		return fmt.Errorf("kind is %q, want %s", k.Kind, kind)
	}
	return nil
}

// parseParts splits and validates the part parameter against the parts of resource (the
// json names of its pointer and map fields) and "id"; ok is false when it answered an error.
func parseParts(w http.ResponseWriter, q url.Values, resource any) (parts map[string]bool, ok bool) {
	raw := multi(q, "part")
	if len(raw) == 0 {
		writeError(w, errRequired("part"))
		return nil, false
	}
	t := reflect.TypeOf(resource).Elem()
	valid := map[string]bool{"id": true}
	for i := range t.NumField() {
		if k := t.Field(i).Type.Kind(); k == reflect.Pointer || k == reflect.Map {
			valid[jsonName(t.Field(i))] = true
		}
	}
	parts = map[string]bool{}
	for _, p := range raw {
		if !valid[p] {
			writeError(w, apiError(http.StatusBadRequest, "youtube.part", "unknownPart", "'"+p+"'", "part"))
			return nil, false
		}
		parts[p] = true
	}
	return parts, true
}

// multi returns the values of a list parameter, sent repeated (part=a&part=b, as
// google.golang.org/api does) or comma-separated (part=a,b), without empty elements.
func multi(q url.Values, name string) []string {
	var out []string
	for _, v := range q[name] {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// project returns a shallow copy of res holding only kind, etag, id and the requested parts.
func project[T any](res *T, parts map[string]bool) *T {
	src, out := reflect.ValueOf(res).Elem(), new(T)
	dst := reflect.ValueOf(out).Elem()
	for i := range src.NumField() {
		if name := jsonName(src.Type().Field(i)); name == "kind" || name == "etag" || name == "id" || parts[name] {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return out
}

// pageInfo is a list's pageInfo, both counts sent even when 0.
func pageInfo(total, perPage int64) *youtube.PageInfo {
	return &youtube.PageInfo{TotalResults: total, ResultsPerPage: perPage, ForceSendFields: []string{"TotalResults", "ResultsPerPage"}}
}

// filters counts the parameters of names q sets.
func filters(q url.Values, names ...string) (n int) {
	for _, f := range names {
		if q.Get(f) != "" {
			n++
		}
	}
	return n
}
