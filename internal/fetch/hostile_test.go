package fetch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestRedirectIsNotFollowed: an answer 302 to another host never takes the
// key there (the request carries it in its query); the run fails naming
// the status, not the location.
func TestRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	r := newPipeline(t, emu)
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		http.Redirect(w, req, other.URL+"/collect?secret-location=1", http.StatusFound)
		return true
	})
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 302") || strings.Contains(err.Error(), "secret-location") {
		t.Fatalf("err = %v, want a failure naming HTTP 302 and not the location", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests, want none (the key goes only to api.endpoint)", n)
	}
	if run.Pages != 0 || emu.Calls("videos.list") != 1 {
		t.Errorf("pages %d, calls %d: want no page and one call (a redirect is not retried)", run.Pages, emu.Calls("videos.list"))
	}
}

// TestOversizedPageIsMalformed: a page with more items than the maxResults
// asked for is rejected whole, whatever it offers next; nothing of it is
// stored and the chart never holds more than its documented bound.
func TestOversizedPageIsMalformed(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", synthetic(200))
	r := newPipeline(t, emu)
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool { // one page of 2,000 items
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(youtube.VideoListResponse{Kind: "youtube#videoListResponse", Items: synthetic(2000)})
		return true
	})
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("err = %v, want the page refused as malformed", err)
	}
	if run.Pages != 0 || run.Videos != 0 {
		t.Fatalf("stored %d pages, %d videos of a malformed page, want none", run.Pages, run.Videos)
	}
	if n, err := r.Store.(*store.Store).CountVideos(context.Background()); err != nil || n != 0 {
		t.Fatalf("%d videos stored (%v), want 0", n, err)
	}
}

// TestCountAboveInt64IsUnknown: a count the API sends above 2^63-1 is
// stored as unknown (null) with a warning, never as a negative number.
func TestCountAboveInt64IsUnknown(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	r := newPipeline(t, emu)
	logs := &strings.Builder{}
	r.Log = zerolog.New(logs)
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"youtube#videoListResponse","items":[{"kind":"youtube#video","id":"huge1","snippet":{"title":"huge","channelId":"UC1","channelTitle":"c"},"statistics":{"viewCount":"18446744073709551615","likeCount":"9223372036854775807","commentCount":"3"}}]}`)
		return true
	})
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Store.(*store.Store).History(context.Background(), "huge1")
	if err != nil || len(h.Appearances) != 1 {
		t.Fatalf("history %+v, %v", h, err)
	}
	a := h.Appearances[0]
	if a.Views != nil {
		t.Errorf("views stored as %d, want null (unknown)", *a.Views)
	}
	if a.Likes == nil || *a.Likes != 9223372036854775807 || a.Comments == nil || *a.Comments != 3 {
		t.Errorf("likes %v comments %v: counts that fit must be kept", a.Likes, a.Comments)
	}
	if !strings.Contains(logs.String(), "count too large") || !strings.Contains(logs.String(), "viewCount") {
		t.Errorf("no warning naming viewCount logged: %s", logs)
	}
	if run.Outcome != store.OutcomeSuccess {
		t.Errorf("outcome %s", run.Outcome)
	}
}

// TestHugeUpstreamMessageIsBoundedInLogs (issue 40 item 5): a 429 whose
// message is 6 MiB (and more in its errors and details), retried, then a per-day 429 of the same size: the log,
// the returned error and the run's reason stay small (each upstream text is
// cut to fetch.MaxUpstreamText bytes).
func TestHugeUpstreamMessageIsBoundedInLogs(t *testing.T) {
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	r := newPipeline(t, emu)
	logs := &strings.Builder{}
	r.Log = zerolog.New(logs)
	r.Settings.Retries = 2
	huge := strings.Repeat("x", 6<<20)
	var n atomic.Int64
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		if n.Add(1) > 2 { // per day, without a reason: the message names it
			fmt.Fprintf(w, `{"error":{"code":429,"message":"Quota exceeded per day %s","status":"RESOURCE_EXHAUSTED"}}`, huge)
			return true
		}
		fmt.Fprintf(w, `{"error":{"code":429,"message":"Quota exceeded per minute %s","status":"RESOURCE_EXHAUSTED",`+
			`"errors":[{"reason":"rateLimitExceeded","message":"%s"}],"details":[{"@type":"x","note":"%s"}]}}`, huge, huge[:512<<10], huge[:512<<10])
		return true
	})
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err == nil || n.Load() != 3 {
		t.Fatalf("err = %.200v after %d calls, want a failure after 3", err, n.Load())
	}
	if l := logs.Len(); l > 32<<10 {
		t.Errorf("%d bytes of log for one run, want at most 32 KiB: %.300s", l, logs)
	}
	if l := len(err.Error()); l > 4<<10 {
		t.Errorf("an error of %d bytes, want at most 4 KiB", l)
	}
	if l := len(run.Reason); l > store.MaxReasonBytes {
		t.Errorf("a reason of %d bytes", l)
	}
}
