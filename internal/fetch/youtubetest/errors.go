package youtubetest

import (
	"encoding/json"
	"fmt"
	"net/http"

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
