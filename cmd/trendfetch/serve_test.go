package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// serveAddr waits for the "serving the read API" log line and returns its address.
func (d *daemon) serveAddr() string { return d.listenAddr("the read API listener", "read API") }

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, raw)
	}
	return resp.StatusCode, body
}

func TestServeRefusesANonLoopbackAddressWithoutAToken(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	res := e.run("serve", "--addr", "0.0.0.0:0")
	if res.code != 2 || !strings.Contains(res.stderr, "--token-file") || !strings.Contains(res.stderr, "loopback") {
		t.Errorf("serve on 0.0.0.0 without a token: exit %d, stderr:\n%s", res.code, res.stderr)
	}
}

func TestServeAnswersAndStopsOnSIGTERM(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	d := e.start("serve", "--addr", "127.0.0.1:0")
	base := "http://" + d.serveAddr()
	code, body := getJSON(t, base+"/v1/runs")
	if runs, _ := body["runs"].([]any); code != 200 || len(runs) != 1 {
		t.Fatalf("GET /v1/runs: %d %v", code, body)
	}
	code, body = getJSON(t, base+"/v1/charts/US")
	if entries, _ := body["entries"].([]any); code != 200 || len(entries) == 0 {
		t.Fatalf("GET /v1/charts/US: %d %v", code, body)
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, d.stderr.String())
	}
}

func TestScheduleServesTheAPIWithItsMetrics(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	cfg := e.writeConfig("regions: [US]\nschedule:\n  cron: \"0 0 1 1 *\"\n")
	d := e.start("--config", cfg, "--api-endpoint", url, "schedule", "--serve", "127.0.0.1:0")
	base := "http://" + d.serveAddr()
	code, body := getJSON(t, base+"/v1/regions")
	regions, _ := body["regions"].([]any)
	if code != 200 || len(regions) != 1 || regions[0].(map[string]any)["next_run"] == nil {
		t.Fatalf("GET /v1/regions: %d %v", code, body)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), "trendfetch_last_success_timestamp_seconds") {
		t.Errorf("/metrics lacks the scheduler's collectors:\n%.500s", raw)
	}
	if code := d.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, d.stderr.String())
	}
}
