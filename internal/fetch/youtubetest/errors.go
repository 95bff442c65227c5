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
func apiError(code int, domain, reason, message, location string) errorResponse {
	item := errorItem{Message: message, Domain: domain, Reason: reason}
	if location != "" {
		item.Location, item.LocationType = location, "parameter"
	}
	return errorResponse{Error: errorBody{Code: code, Message: message, Errors: []errorItem{item}}}
}

// withStatus returns e with its google.rpc status and details.
func withStatus(e errorResponse, status string, details ...json.RawMessage) errorResponse {
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

func errRequired(param string) errorResponse {
	return apiError(http.StatusBadRequest, "global", "required", "Required parameter: "+param, param)
}

func errInvalidValue(param, value, want string) errorResponse {
	return apiError(http.StatusBadRequest, "global", "invalidParameter", "Invalid value '"+value+"'. "+want, param)
}

// errTooManyIDs is the answer to n ids, more than one call takes.
func errTooManyIDs(n int) errorResponse {
	return errInvalidValue("id", fmt.Sprint(n, " ids"), fmt.Sprintf("At most %d ids may be requested.", callsite.MaxIDs))
}

func errMissingFilter(filters string) errorResponse {
	return apiError(http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "No filter selected. Expected one of: "+filters, "")
}

// errStatus is the body of a failure injected with FailNext for an HTTP status.
func errStatus(status int) errorResponse {
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
// in 2026 (docs/design.md §3).
type Answer int

const (
	// PerDay429 is a spent per-method daily bucket in Google Cloud's granular quota shape
	// (since 2026-06-01): HTTP 429, status RESOURCE_EXHAUSTED, message "Quota exceeded for
	// quota metric '<metric>' and limit '<metric> per day' of service 'youtube.googleapis.com'
	// for consumer 'project_number:…'", errors[0] rateLimitExceeded (domain global) and an
	// ErrorInfo detail (RATE_LIMIT_EXCEEDED) naming quota_metric and quota_limit. The metric
	// is "Search Queries" for search.list, "Batch Get Stats Queries" for videos.batchGetStats
	// (approximating Google's name), else "Queries".
	PerDay429 Answer = iota + 1
	// PerMinute429 is the same shape for the limit "Queries per minute", with Retry-After: 1.
	PerMinute429
	// QuotaExceeded is 403 quotaExceeded, domain youtube.quota: the project's daily units
	// spent (the recorded body's fields).
	QuotaExceeded
	// DailyLimitExceeded is 403 dailyLimitExceeded, domain usageLimits: "The quota will be
	// reset at midnight Pacific Time".
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
