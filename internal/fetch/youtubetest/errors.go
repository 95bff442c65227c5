package youtubetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// errorResponse is the JSON envelope of a Google API error, the shape that
// googleapi.CheckResponse decodes into *googleapi.Error.
type errorResponse struct {
	Error errorBody `json:"error"`
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

// apiError builds a one-item error body.
func apiError(code int, domain, reason, message, location string) errorResponse {
	item := errorItem{Message: message, Domain: domain, Reason: reason}
	if location != "" {
		item.Location, item.LocationType = location, "parameter"
	}
	return errorResponse{Error: errorBody{Code: code, Message: message, Errors: []errorItem{item}}}
}

// Error bodies. Their sources:
//   - quotaExceeded: byte-for-byte the fields of the answer recorded from the API
//     (docs/design.md §3 and §7; 403, domain youtube.quota).
//   - videoChartNotFound, keyInvalid: docs/design.md §3 and the YouTube Data API error reference;
//     the message texts are Google's.
//   - backendError, rateLimitExceeded, parameter errors: Google's documented global errors;
//     messages approximate Google's.
const (
	msgQuotaExceeded = `The request cannot be completed because you have exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.`
	msgChartNotFound = "The requested video chart is not supported or is not available."
	msgKeyInvalid    = "API key not valid. Please pass a valid API key."
	msgPageToken     = "The request specifies an invalid page token."
)

func errQuotaExceeded() errorResponse {
	return apiError(http.StatusForbidden, "youtube.quota", "quotaExceeded", msgQuotaExceeded, "")
}

func errChartNotFound() errorResponse {
	return apiError(http.StatusBadRequest, "youtube.video", "videoChartNotFound", msgChartNotFound, "chart")
}

func errKeyInvalid() errorResponse {
	e := apiError(http.StatusBadRequest, "usageLimits", "keyInvalid", msgKeyInvalid, "")
	e.Error.Status = "INVALID_ARGUMENT"
	e.Error.Details = []json.RawMessage{
		json.RawMessage(`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"youtube.googleapis.com"}}`),
		json.RawMessage(`{"@type":"type.googleapis.com/google.rpc.LocalizedMessage","locale":"en-US","message":"` + msgKeyInvalid + `"}`),
	}
	return e
}

func errInvalidPageToken() errorResponse {
	return apiError(http.StatusBadRequest, "youtube.parameter", "invalidPageToken", msgPageToken, "pageToken")
}

func errRequired(param string) errorResponse {
	return apiError(http.StatusBadRequest, "global", "required", "Required parameter: "+param, param)
}

func errUnknownPart(part string) errorResponse {
	return apiError(http.StatusBadRequest, "youtube.part", "unknownPart", "'"+part+"'", "part")
}

func errInvalidValue(param, value, want string) errorResponse {
	msg := "Invalid value '" + value + "'. " + want
	return apiError(http.StatusBadRequest, "global", "invalidParameter", msg, param)
}

// errTooManyIDs is the answer to n ids, more than one call takes.
func errTooManyIDs(n int) errorResponse {
	return errInvalidValue("id", fmt.Sprint(n, " ids"), fmt.Sprintf("At most %d ids may be requested.", callsite.MaxIDs))
}

func errMissingFilter(filters string) errorResponse {
	msg := "No filter selected. Expected one of: " + filters
	return apiError(http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", msg, "")
}

// errStatus is the body of an injected failure with the given HTTP status.
func errStatus(status int) errorResponse {
	switch {
	case status == http.StatusTooManyRequests:
		return apiError(status, "usageLimits", "rateLimitExceeded", "Rate Limit Exceeded", "")
	case status == http.StatusForbidden:
		return errQuotaExceeded()
	case status == http.StatusServiceUnavailable:
		e := apiError(status, "global", "backendError", "The service is currently unavailable.", "")
		e.Error.Status = "UNAVAILABLE"
		return e
	case status >= 500:
		e := apiError(status, "global", "backendError", "Backend Error", "")
		e.Error.Status = "INTERNAL"
		return e
	default:
		return apiError(status, "global", "badRequest", http.StatusText(status), "")
	}
}

// Answer is a quota answer of the API that AnswerNext injects, in the shapes
// Google answers in 2026 (docs/design.md §3).
type Answer int

const (
	// PerDay429 is a spent per-method daily bucket in Google Cloud's shape
	// (granular quota, since 2026-06-01): HTTP 429, status
	// RESOURCE_EXHAUSTED, the message "Quota exceeded for quota metric
	// '<metric>' and limit '<metric> per day' of service
	// 'youtube.googleapis.com' for consumer 'project_number:…'", errors[0]
	// reason rateLimitExceeded (domain global), and an ErrorInfo detail
	// (reason RATE_LIMIT_EXCEEDED, domain googleapis.com) whose metadata
	// names quota_metric and quota_limit. The metric is the method's:
	// "Search Queries" for search.list, "Batch Get Stats Queries" for
	// videos.batchGetStats (the name approximates Google's), else "Queries".
	PerDay429 Answer = iota + 1
	// PerMinute429 is the same shape for the limit "Queries per minute",
	// with a Retry-After of 1 second.
	PerMinute429
	// QuotaExceeded is 403 quotaExceeded, domain youtube.quota: the project's
	// daily units spent (the recorded body's fields).
	QuotaExceeded
	// DailyLimitExceeded is 403 dailyLimitExceeded, domain usageLimits: "The
	// quota will be reset at midnight Pacific Time".
	DailyLimitExceeded
)

// answerBody is the body of a, answered to method.
func answerBody(a Answer, method string) errorResponse {
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
		limit := fmt.Sprintf("%s per %s", metric, map[string]string{"Day": "day", "Minute": "minute"}[per])
		msg := fmt.Sprintf("Quota exceeded for quota metric '%s' and limit '%s' of service 'youtube.googleapis.com' for consumer 'project_number:000000000000'.", metric, limit)
		e := apiError(http.StatusTooManyRequests, "global", "rateLimitExceeded", msg, "")
		e.Error.Status = "RESOURCE_EXHAUSTED"
		info, _ := json.Marshal(map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
			"metadata": map[string]string{"service": "youtube.googleapis.com", "consumer": "projects/000000000000",
				"quota_metric": "youtube.googleapis.com/" + id, "quota_limit": strings.ReplaceAll(metric, " ", "") + "Per" + per + "PerProject"}})
		e.Error.Details = []json.RawMessage{info}
		return e
	case DailyLimitExceeded:
		return apiError(http.StatusForbidden, "usageLimits", "dailyLimitExceeded",
			"Daily Limit Exceeded. The quota will be reset at midnight Pacific Time (PT). You may monitor your quota usage and adjust limits in the API Console: https://console.developers.google.com/apis/api/youtube.googleapis.com/quotas?project=000000000000", "")
	default:
		return errQuotaExceeded()
	}
}
