package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestAmendedRefreshRun (issue 23, store.policy amended) runs on
// a database whose 200 videos were last captured 40 days ago: the run
// refreshes their text with videos.list.refresh, 4 calls of 50 ids reserved
// and recorded on the run; the 100 the API still returns get their new
// title, the text of the 100 it no longer returns is removed, ids kept.
func TestAmendedRefreshRun(t *testing.T) {
	emu, url, e := sampleInproc(t, "US")
	fillStore(t, e.dbPath(), 1, "US")
	st, err := store.Open(context.Background(), e.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	aged := time.Now().AddDate(0, 0, -40).UTC().Format("2006-01-02T15:04:05.000000Z")
	for _, q := range []string{`UPDATE captures SET captured_at = ?`, `UPDATE video_stats SET last_seen_at = ?`, `UPDATE videos SET first_seen_at = ?`} {
		if _, err := st.DB().Exec(q, aged); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	var still []*youtube.Video
	for i := 0; i < 100; i++ {
		still = append(still, &youtube.Video{Id: fmt.Sprintf("U%09d", i), Snippet: &youtube.VideoSnippet{Title: fmt.Sprintf("Renamed %d", i)}})
	}
	emu.AddVideos(still...)
	cfg := e.writeConfig("store:\n  policy: amended\n  refresh_per_day: 20\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	res := e.run("--config", cfg, "runs", "--json")
	var runs []struct {
		Units map[string]int64 `json:"units"`
		Calls map[string]int   `json:"calls"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &runs); err != nil || len(runs) == 0 {
		t.Fatalf("runs --json: %v\n%s", err, res.stdout)
	}
	if r := runs[0]; r.Calls[callsite.VideosListRefresh] != 4 || r.Units["units"] != 2+4 {
		t.Errorf("run: calls %v units %v; want 4 videos.list.refresh calls, 2 chart pages + 4 units", r.Calls, r.Units)
	}
	st, err = store.Open(context.Background(), e.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var renamed, removed, ids int
	if err := st.DB().QueryRow(`SELECT (SELECT count(*) FROM videos WHERE title LIKE 'Renamed %'),
  (SELECT count(*) FROM videos WHERE title = '' AND description = ''), (SELECT count(*) FROM videos WHERE id LIKE 'U%')`).Scan(&renamed, &removed, &ids); err != nil {
		t.Fatal(err)
	}
	if renamed != 100 || removed != 100 || ids != 200 {
		t.Errorf("%d renamed, %d removed, %d ids kept; want 100, 100, 200", renamed, removed, ids)
	}
}
