package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/quota"
)

// TestQuotaStatusNamesThePreset: quota status says which preset the buckets
// come from, for people and in --json.
func TestQuotaStatusNamesThePreset(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	cfg := e.writeConfig("quota:\n  preset: google-2026\n")
	if res := e.run("--config", cfg, "--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	res := e.run("--config", cfg, "quota", "status", "--json")
	var st quota.StatusView
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || res.code != 0 {
		t.Fatalf("quota status --json: exit %d, %v\n%s", res.code, err, res.stdout)
	}
	if st.Preset != "google-2026" || len(st.Buckets) != 3 || st.Buckets[0].Limit != 10_000 || !st.Buckets[0].Calendar || st.Buckets[0].Used != 2 {
		t.Errorf("status: %+v", st)
	}
	res = e.run("--config", cfg, "quota", "status")
	if !strings.Contains(res.stdout, "preset google-2026") {
		t.Errorf("human status does not name the preset:\n%s", res.stdout)
	}
}
