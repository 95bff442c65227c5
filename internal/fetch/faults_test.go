package fetch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// synthetic returns n distinct videos v000, v001, ...
func synthetic(n int) []*youtube.Video {
	out := make([]*youtube.Video, n)
	for i := range out {
		out[i] = &youtube.Video{Kind: "youtube#video", Id: fmt.Sprintf("v%03d", i),
			Snippet: &youtube.VideoSnippet{Title: fmt.Sprintf("synthetic video %d", i), ChannelId: "UCsynthetic", ChannelTitle: "synthetic"}}
	}
	return out
}

// servePages answers every videos.list with pages of 50 of videos, page
// tokens "o<offset>", and the nextPageToken chosen by next (given the
// offset of the page served; "" ends the chart).
func servePages(videos []*youtube.Video, next func(offset int) string) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		off, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("pageToken"), "o"))
		end := min(off+50, len(videos))
		if off > end {
			off = end
		}
		resp := youtube.VideoListResponse{Kind: "youtube#videoListResponse", Items: videos[off:end], NextPageToken: next(off)}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return true
	}
}

// assertWhole checks that the store is consistent and holds only whole
// pages of the run: contiguous ranks from 1, as many as the run counts.
func assertWhole(t *testing.T, st *store.Store, run store.Run) {
	t.Helper()
	ctx := context.Background()
	if err := st.Check(ctx); err != nil {
		t.Fatal(err)
	}
	chart, err := st.Chart(ctx, run.ID, run.Region)
	if err != nil {
		t.Fatal(err)
	}
	if len(chart) != run.Videos || len(chart)%50 != 0 {
		t.Errorf("%d chart rows stored for a run counting %d videos in %d pages: want whole pages of 50", len(chart), run.Videos, run.Pages)
	}
	for i, c := range chart {
		if c.Rank != i+1 {
			t.Fatalf("rank %d stored at position %d", c.Rank, i+1)
		}
	}
	runs, err := st.Runs(ctx, 1)
	if err != nil || len(runs) != 1 || runs[0].Outcome != run.Outcome || runs[0].Pages != run.Pages {
		t.Errorf("recorded run %+v (%v), want it to match %+v", runs, err, run)
	}
}

// TestEmulatorMisbehaving: the API answering 500s, bodies slower than the
// request timeout, truncated JSON, a page token loop, a chart that never
// ends and more than the documented 200 results. Each run ends cleanly as
// failed (exit class 1: not a StopError, not a CredentialError), after a
// bounded number of calls, with whole pages only.
func TestEmulatorMisbehaving(t *testing.T) {
	const retries = 2
	for _, tc := range []struct {
		name      string
		setup     func(emu *youtubetest.Server)
		calls     int // videos.list calls, exactly
		pages     int // pages stored
		reason    string
		timeout   time.Duration
		hangGuard time.Duration
	}{
		{
			name:   "500 on every call",
			setup:  func(emu *youtubetest.Server) { emu.FailNext("", 1000, 500) },
			calls:  1 + retries,
			reason: "HTTP 500",
		},
		{
			name: "503 from page 3 on",
			setup: func(emu *youtubetest.Server) {
				emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					if r.URL.Query().Get("pageToken") == "CGQQAA" {
						w.WriteHeader(http.StatusServiceUnavailable)
						fmt.Fprint(w, `{"error":{"code":503,"message":"unavailable","errors":[{"reason":"backendError"}]}}`)
						return true
					}
					return false
				})
			},
			calls: 2 + 1 + retries, pages: 2, reason: "HTTP 503",
		},
		{
			name: "body slower than the request timeout",
			setup: func(emu *youtubetest.Server) {
				emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"kind":"youtube#videoListResponse","items":[`)
					http.NewResponseController(w).Flush()
					select { // the rest never comes before the client gives up
					case <-r.Context().Done():
					case <-time.After(10 * time.Second):
					}
					return true
				})
			},
			calls: 1 + retries, timeout: 200 * time.Millisecond, reason: "deadline exceeded",
		},
		{
			name: "truncated JSON (body shorter than Content-Length)",
			setup: func(emu *youtubetest.Server) {
				emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					if r.URL.Query().Get("pageToken") == "" {
						return false
					}
					body := `{"kind":"youtube#videoListResponse","items":[{"id":"x","snippet":{"title":"cut here`
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", strconv.Itoa(len(body)+500))
					fmt.Fprint(w, body)
					http.NewResponseController(w).Flush()
					if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
						c.Close()
					}
					return true
				})
			},
			calls: 1 + 1 + retries, pages: 1, reason: "unexpected EOF",
		},
		{
			name: "page token loop",
			setup: func(emu *youtubetest.Server) {
				emu.SetHook(servePages(synthetic(200), func(int) string { return "o50" })) // page 2 points at itself
			},
			calls: 2, pages: 2, reason: `page token "o50" twice`,
		},
		{
			name: "a chart that never ends",
			setup: func(emu *youtubetest.Server) {
				// Fresh tokens forever, repeating the same videos.
				emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
					n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("pageToken"), "n"))
					w.Header().Set("Content-Type", "application/json")
					json.NewEncoder(w).Encode(youtube.VideoListResponse{Items: synthetic(50), NextPageToken: fmt.Sprintf("n%d", n+1)})
					return true
				})
			},
			calls: 4, pages: 4, reason: "more than the documented 200",
		},
		{
			name: "250 results served",
			setup: func(emu *youtubetest.Server) {
				emu.SetHook(servePages(synthetic(250), func(off int) string {
					if off+50 < 250 {
						return "o" + strconv.Itoa(off+50)
					}
					return ""
				}))
			},
			calls: 4, pages: 4, reason: "more than the documented 200",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu := youtubetest.New()
			emu.SetChart("US", synthetic(200))
			r := newPipeline(t, emu)
			r.Settings.Retries, r.Settings.RetryBackoff = retries, time.Millisecond
			if tc.timeout > 0 {
				r.Settings.Timeout = tc.timeout
			}
			tc.setup(emu)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // hang guard
			defer cancel()
			run, err := r.Run(ctx, "US", fetch.Lease{})
			took := time.Since(start)
			emu.SetHook(nil)
			if ctx.Err() != nil {
				t.Fatalf("run hung for %s", took)
			}
			var (
				stop *fetch.StopError
				ce   *fetch.CredentialError
			)
			if err == nil || errors.As(err, &stop) || errors.As(err, &ce) {
				t.Fatalf("err = %v, want a plain failure (exit 1)", err)
			}
			if !strings.Contains(err.Error(), tc.reason) || !strings.Contains(run.Reason, tc.reason) {
				t.Errorf("err %q, reason %q: want them to say %q", err, run.Reason, tc.reason)
			}
			if run.Outcome != store.OutcomeFailed {
				t.Errorf("outcome %s, want failed", run.Outcome)
			}
			if got := emu.Calls("videos.list"); got != tc.calls || run.Calls["videos.list"] != tc.calls || run.Units["units"] != int64(tc.calls) {
				t.Errorf("%d calls (run counts %d, units %v), want exactly %d, every one reserved", got, run.Calls["videos.list"], run.Units, tc.calls)
			}
			if run.Pages != tc.pages {
				t.Errorf("%d pages stored, want %d", run.Pages, tc.pages)
			}
			assertWhole(t, r.Store.(*store.Store), run)
			t.Logf("%d calls in %s: %s", tc.calls, took.Round(time.Millisecond), run.Reason)
		})
	}
}
