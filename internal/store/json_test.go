package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMachineShapes: --json and the read API print snake_case keys, null for
// unknown values and RFC 3339 UTC times, never Go field names or zero times.
func TestMachineShapes(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	running := Run{ID: 7, Credential: "proj", Region: "US", StartedAt: time.Date(2026, 3, 2, 9, 0, 0, 0, loc), Outcome: OutcomeRunning}
	b, err := json.Marshal(running)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":7`, `"started_at":"2026-03-02T08:00:00Z"`, `"finished_at":null`, `"duration_ms":null`,
		`"reason":null`, `"retry_after_ms":null`, `"retry_at":null`, `"units":{}`, `"outcome":"running"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("run JSON lacks %s: %s", want, b)
		}
	}
	denied := running
	denied.FinishedAt = running.StartedAt.Add(1500 * time.Millisecond)
	denied.Outcome, denied.Reason, denied.RetryAfter = OutcomeDenied, "quota denied", 90*time.Second
	denied.RetryAt = denied.FinishedAt.Add(denied.RetryAfter)
	b, _ = json.Marshal(denied)
	for _, want := range []string{`"duration_ms":1500`, `"retry_after_ms":90000`, `"retry_at":"2026-03-02T08:01:31.5Z"`, `"reason":"quota denied"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("denied run JSON lacks %s: %s", want, b)
		}
	}
	h := Hit{VideoID: "abc", Title: "T", Score: -1.5}
	b, _ = json.Marshal(h)
	if want := `{"video_id":"abc","title":"T","channel_title":"","snippet":"","highlights":[],"score":-1.5,"last_seen":null,"regions":[]}`; string(b) != want {
		t.Errorf("hit JSON = %s, want %s", b, want)
	}
	for _, goName := range []string{"VideoID", "StartedAt", "0001-01-01"} {
		if strings.Contains(string(b), goName) {
			t.Errorf("JSON shows %s", goName)
		}
	}
}
