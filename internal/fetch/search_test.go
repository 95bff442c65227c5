package fetch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// searchIDs returns the video ids of a recorded search page, in order.
func searchIDs(t *testing.T, raw []byte) []string {
	t.Helper()
	var resp youtube.SearchListResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range resp.Items {
		if it.Id != nil && it.Id.VideoId != "" {
			ids = append(ids, it.Id.VideoId)
		}
	}
	return ids
}

// searchPipeline serves the sample chart as US and the recorded first search
// page, and returns a Runner with one configured search and its log.
func searchPipeline(t *testing.T) (*fetch.Runner, *youtubetest.Server, []string, *bytes.Buffer) {
	t.Helper()
	emu := youtubetest.New()
	emu.SetChart("US", youtubetest.Sample())
	p1 := recorded(t, "api_json/pyyoutube__search_search_by_keywords_p1.json")
	if err := emu.SetSearchPages(p1); err != nil {
		t.Fatal(err)
	}
	r := newPipeline(t, emu)
	var logs bytes.Buffer
	r.Log = zerolog.New(&logs)
	r.Searches = func(string) []fetch.Search { return []fetch.Search{{Q: "surf", MaxPages: 1}} }
	return r, emu, searchIDs(t, p1), &logs
}

// searchCapture returns the search capture of q stored by run and its entries.
func searchCapture(t *testing.T, st *store.Store, run store.Run, q string) (store.Capture, []store.Entry) {
	t.Helper()
	c, entries, err := st.CaptureAt(context.Background(), store.CaptureQuery{Region: "US", Kind: store.KindSearch, Query: q, RunID: run.ID})
	if err != nil {
		t.Fatalf("no search capture of %q stored by run %d: %v", q, run.ID, err)
	}
	return c, entries
}

// TestSearchAgainstTheEmulatorIsStored: the emulator answers videos.list id=
// for the ids its search returns, so a configured search against it stores
// every hit at its rank (before, it spent 101 units and stored nothing).
func TestSearchAgainstTheEmulatorIsStored(t *testing.T) {
	r, _, ids, _ := searchPipeline(t)
	run, err := r.Run(context.Background(), "US", fetch.Lease{})
	if err != nil {
		t.Fatal(err)
	}
	c, entries := searchCapture(t, r.Store.(*store.Store), run, "surf")
	if !c.Complete || len(entries) != len(ids) {
		t.Fatalf("search capture complete=%v with %d entries, want complete with the %d hits", c.Complete, len(entries), len(ids))
	}
	for i, e := range entries {
		if e.Rank != i+1 || e.VideoID != ids[i] || e.Title == "" {
			t.Errorf("entry %d = rank %d %s %q, want rank %d %s with its title", i, e.Rank, e.VideoID, e.Title, i+1, ids[i])
		}
	}
}

// TestSearchHitsAreStoredWhateverVideosListReturns: hits that videos.list
// does not return leave gaps at their ranks and a warning naming the
// query's units; a search whose hits videos.list returns none of is still
// stored, as an empty complete capture.
func TestSearchHitsAreStoredWhateverVideosListReturns(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(i int) bool // hit i (0-based) is not returned by videos.list
	}{
		{"some missing", func(i int) bool { return i == 1 || i == 4 }},
		{"all missing", func(int) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, emu, ids, logs := searchPipeline(t)
			dropped := map[string]bool{}
			for i, id := range ids {
				if tc.drop(i) {
					dropped[id] = true
				}
			}
			emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
				if !strings.HasSuffix(req.URL.Path, "/videos") || req.URL.Query().Get("id") == "" {
					return false
				}
				resp := youtube.VideoListResponse{Kind: "youtube#videoListResponse", Items: []*youtube.Video{}}
				for _, id := range strings.Split(strings.Join(req.URL.Query()["id"], ","), ",") {
					if !dropped[id] {
						resp.Items = append(resp.Items, &youtube.Video{Kind: "youtube#video", Id: id, Snippet: &youtube.VideoSnippet{Title: "hit " + id}})
					}
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(resp)
				return true
			})
			run, err := r.Run(context.Background(), "US", fetch.Lease{})
			if err != nil {
				t.Fatal(err)
			}
			if run.Units["units"] != 2+100+1 || run.Units["search"] != 1 {
				t.Errorf("units = %v, want 103 units (two chart pages, a search page, one id batch) and 1 search", run.Units)
			}
			c, entries := searchCapture(t, r.Store.(*store.Store), run, "surf")
			if !c.Complete || len(entries) != len(ids)-len(dropped) {
				t.Errorf("capture complete=%v with %d entries, want complete with %d", c.Complete, len(entries), len(ids)-len(dropped))
			}
			for _, e := range entries {
				if e.Rank < 1 || e.Rank > len(ids) || ids[e.Rank-1] != e.VideoID || dropped[e.VideoID] {
					t.Errorf("entry rank %d is %s, want hit %d of the search", e.Rank, e.VideoID, e.Rank)
				}
			}
			out := logs.String()
			if !strings.Contains(out, `"level":"warn"`) || !strings.Contains(out, `"units":{"search":1,"units":100}`) || !strings.Contains(out, `"q":"surf"`) {
				t.Errorf("no warning naming the query and its units:\n%s", out)
			}
		})
	}
}

// TestSearchStoppedBeforeItsHitsAreFetchedWarns: when the run fails after
// the search was paid but before its hits were fetched, a warning names
// the query and the units it cost.
func TestSearchStoppedBeforeItsHitsAreFetchedWarns(t *testing.T) {
	r, emu, _, logs := searchPipeline(t)
	emu.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		if !strings.HasSuffix(req.URL.Path, "/videos") || req.URL.Query().Get("id") == "" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"code":400,"message":"bad","errors":[{"reason":"badRequest","domain":"global","message":"bad"}]}}`))
		return true
	})
	if _, err := r.Run(context.Background(), "US", fetch.Lease{}); err == nil {
		t.Fatal("the run succeeded although videos.list id= failed")
	}
	if out := logs.String(); !strings.Contains(out, "search spent quota but its hits are not stored") || !strings.Contains(out, `"units":{"search":1,"units":100}`) {
		t.Errorf("no warning naming the query's units:\n%s", out)
	}
}
