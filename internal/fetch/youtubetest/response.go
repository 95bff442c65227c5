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

	"github.com/trendfetch/trendfetch/internal/callsite"
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

func writeError(w http.ResponseWriter, e *errorResponse) {
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	writeJSON(w, e.Error.Code, e)
}

// writeList answers resp, a pointer to a youtube list response, with items always sent and
// its etag computed from its content.
func writeList(w http.ResponseWriter, resp any) {
	v := reflect.ValueOf(resp).Elem()
	v.FieldByName("ForceSendFields").Set(reflect.ValueOf([]string{"Items"}))
	b, _ := json.Marshal(resp)
	v.FieldByName("Etag").SetString(etagOf(b))
	writeJSON(w, http.StatusOK, resp)
}

// decodeKind unmarshals raw, a recorded answer, into v; its kind, when set, must be kind.
func decodeKind(raw []byte, v any, kind string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	if k := reflect.ValueOf(v).Elem().FieldByName("Kind").String(); k != "" && k != kind {
		return fmt.Errorf("kind is %q, want %s", k, kind)
	}
	return nil
}

// parseParts splits and validates the part parameter against the parts of resource (the
// json names of its pointer and map fields) and "id", or returns the error to answer.
func parseParts(q url.Values, resource any) (parts map[string]bool, e *errorResponse) {
	raw := multi(q, "part")
	if len(raw) == 0 {
		return nil, apiError(http.StatusBadRequest, "global", "required", "Required parameter: part", "part")
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
			return nil, apiError(http.StatusBadRequest, "youtube.part", "unknownPart", "'"+p+"'", "part")
		}
		parts[p] = true
	}
	return parts, nil
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

// errorResponse is the JSON envelope of a Google API error, the shape that
// googleapi.CheckResponse decodes into *googleapi.Error.
type errorResponse struct {
	Error      errorBody `json:"error"`
	retryAfter string    // the Retry-After header, when set
}

type errorBody struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Errors  []errorItem       `json:"errors"`
	Status  string            `json:"status,omitempty"`
	Details []json.RawMessage `json:"details,omitempty"`
}

type errorItem struct {
	Message      string `json:"message"`
	Domain       string `json:"domain"`
	Reason       string `json:"reason"`
	Location     string `json:"location,omitempty"`
	LocationType string `json:"locationType,omitempty"`
}

// apiError builds a one-item error body; a location is a parameter's name.
func apiError(code int, domain, reason, message, location string) *errorResponse {
	item := errorItem{Message: message, Domain: domain, Reason: reason}
	if location != "" {
		item.Location, item.LocationType = location, "parameter"
	}
	return &errorResponse{Error: errorBody{Code: code, Message: message, Errors: []errorItem{item}}}
}

// withStatus sets e's google.rpc status and details and returns e.
func withStatus(e *errorResponse, status string, details ...json.RawMessage) *errorResponse {
	e.Error.Status, e.Error.Details = status, details
	return e
}

// Error bodies. quotaExceeded has the fields of the answer recorded from the API (docs/design.md
// §3, §7); videoChartNotFound and keyInvalid Google's texts (§3 and the API's error reference);
// the rest are Google's documented global errors, messages approximated.
var (
	errQuotaExceeded = apiError(http.StatusForbidden, "youtube.quota", "quotaExceeded",
		`The request cannot be completed because you have exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.`, "")
	errChartNotFound = apiError(http.StatusBadRequest, "youtube.video", "videoChartNotFound",
		"The requested video chart is not supported or is not available.", "chart")
	errKeyInvalid = withStatus(apiError(http.StatusBadRequest, "usageLimits", "keyInvalid", msgKeyInvalid, ""), "INVALID_ARGUMENT",
		json.RawMessage(`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"youtube.googleapis.com"}}`),
		json.RawMessage(`{"@type":"type.googleapis.com/google.rpc.LocalizedMessage","locale":"en-US","message":"`+msgKeyInvalid+`"}`))
	errInvalidPageToken = apiError(http.StatusBadRequest, "youtube.parameter", "invalidPageToken",
		"The request specifies an invalid page token.", "pageToken")
)

const msgKeyInvalid = "API key not valid. Please pass a valid API key."

func errInvalidValue(param, value, want string) *errorResponse {
	return apiError(http.StatusBadRequest, "global", "invalidParameter", "Invalid value '"+value+"'. "+want, param)
}

// errTooManyIDs is the answer to n ids, more than one call takes.
func errTooManyIDs(n int) *errorResponse {
	return errInvalidValue("id", fmt.Sprint(n, " ids"), fmt.Sprintf("At most %d ids may be requested.", callsite.MaxIDs))
}

func errMissingFilter(filters string) *errorResponse {
	return apiError(http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "No filter selected. Expected one of: "+filters, "")
}

// errStatus is the body of a failure injected with FailNext for an HTTP status.
func errStatus(status int) *errorResponse {
	switch {
	case status == http.StatusTooManyRequests:
		return apiError(status, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded", "")
	case status == http.StatusForbidden:
		return errQuotaExceeded
	case status == http.StatusServiceUnavailable:
		return withStatus(apiError(status, "global", "backendError", "The service is currently unavailable.", ""), "UNAVAILABLE")
	case status >= 500:
		return withStatus(apiError(status, "global", "backendError", "Backend Error", ""), "INTERNAL")
	}
	return apiError(status, "global", "badRequest", http.StatusText(status), "")
}

// Answer is a quota answer of the API that AnswerNext injects, in the shapes Google answers
// in 2026 (docs/design.md §3, "Quota answers").
type Answer int

const (
	// PerDay429 is a spent per-method daily bucket: HTTP 429 RESOURCE_EXHAUSTED, errors[0]
	// rateLimitExceeded and an ErrorInfo detail naming quota_metric and quota_limit; the
	// metric is "Search Queries" for search.list, "Batch Get Stats Queries" (approximating
	// Google's name) for videos.batchGetStats, else "Queries".
	PerDay429 Answer = iota + 1
	// PerMinute429 is the same shape for the limit "Queries per minute", with Retry-After: 1.
	PerMinute429
	// QuotaExceeded is 403 quotaExceeded, domain youtube.quota (the recorded body's fields).
	QuotaExceeded
	// DailyLimitExceeded is 403 dailyLimitExceeded, domain usageLimits.
	DailyLimitExceeded
)

// answerBody is the body of a, answered to method.
func answerBody(a Answer, method string) *errorResponse {
	switch a {
	case PerDay429, PerMinute429:
		metric, id, per := "Queries", "default", "Minute"
		if a == PerDay429 {
			per = "Day"
			switch method {
			case callsite.SearchList:
				metric, id = "Search Queries", "search_queries"
			case callsite.VideosBatchGetStats:
				metric, id = "Batch Get Stats Queries", "batch_get_stats_queries"
			}
		}
		msg := fmt.Sprintf("Quota exceeded for quota metric '%s' and limit '%s per %s' of service 'youtube.googleapis.com' for consumer 'project_number:000000000000'.",
			metric, metric, strings.ToLower(per))
		info, _ := json.Marshal(map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
			"metadata": map[string]string{"service": "youtube.googleapis.com", "consumer": "projects/000000000000",
				"quota_metric": "youtube.googleapis.com/" + id, "quota_limit": strings.ReplaceAll(metric, " ", "") + "Per" + per + "PerProject"}})
		e := withStatus(apiError(http.StatusTooManyRequests, "global", "rateLimitExceeded", msg, ""), "RESOURCE_EXHAUSTED", info)
		if a == PerMinute429 {
			e.retryAfter = "1"
		}
		return e
	case DailyLimitExceeded:
		return apiError(http.StatusForbidden, "usageLimits", "dailyLimitExceeded",
			"Daily Limit Exceeded. The quota will be reset at midnight Pacific Time (PT). You may monitor your quota usage and adjust limits in the API Console: https://console.developers.google.com/apis/api/youtube.googleapis.com/quotas?project=000000000000", "")
	}
	return errQuotaExceeded
}
