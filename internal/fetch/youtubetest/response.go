package youtubetest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
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

func writeError(w http.ResponseWriter, e errorResponse) {
	b, err := json.Marshal(e)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.Error.Code)
	_, _ = w.Write(b)
}

// writeList marshals a list response, sets its etag from the content and answers 304 when
// the request's If-None-Match equals it (still charged; docs/design.md §3 assumes a 304 costs).
// setEtag stores the etag in the response value.
func writeList(w http.ResponseWriter, r *http.Request, resp any, setEtag func(string)) {
	b, err := json.Marshal(resp)
	if err != nil {
		writeError(w, apiError(http.StatusInternalServerError, "global", "backendError", "cannot marshal response: "+err.Error(), ""))
		return
	}
	etag := etagOf(b)
	setEtag(etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Trim(inm, `"`) == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if b, err = json.Marshal(resp); err != nil {
		writeError(w, apiError(http.StatusInternalServerError, "global", "backendError", "cannot marshal response: "+err.Error(), ""))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// parseParts splits and validates the part parameter against the json names of the
// resource's part fields (plus "id").
func parseParts(w http.ResponseWriter, q url.Values, resource any) (map[string]bool, bool) {
	raw := multi(q, "part")
	if len(raw) == 0 {
		writeError(w, errRequired("part"))
		return nil, false
	}
	valid := partNames(resource)
	parts := map[string]bool{}
	for _, p := range raw {
		if !valid[p] {
			writeError(w, errUnknownPart(p))
			return nil, false
		}
		parts[p] = true
	}
	return parts, true
}

// multi returns the values of a list parameter, which clients send either repeated
// (part=a&part=b, as google.golang.org/api does) or comma-separated (part=a,b); empty
// elements are dropped.
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

// partNames returns the json names of the pointer and map fields of a resource struct,
// which are its parts, plus "id".
func partNames(resource any) map[string]bool {
	t := reflect.TypeOf(resource).Elem()
	names := map[string]bool{"id": true}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if k := f.Type.Kind(); k != reflect.Pointer && k != reflect.Map {
			continue
		}
		if name := jsonName(f); name != "" {
			names[name] = true
		}
	}
	return names
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if tag == "" || tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	return name
}

// project returns a shallow copy of the resource (a pointer to struct) holding only kind,
// etag, id and the requested parts.
func project[T any](res *T, parts map[string]bool) *T {
	src := reflect.ValueOf(res).Elem()
	out := new(T)
	dst := reflect.ValueOf(out).Elem()
	t := src.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch name := jsonName(f); {
		case name == "kind" || name == "etag" || name == "id", parts[name]:
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
