package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// nodeExporterScrape runs Debian's prometheus-node-exporter with only its
// textfile collector over dir, scrapes its /metrics once and returns the
// families; it fails the test when node_exporter reports an error reading
// the files (node_textfile_scrape_error not 0, an error in its log or in
// the answer, e.g. "was collected before with the same name and label
// values"). Without the binary the test is skipped, or fails under CI=true
// (.ci/run installs it).
func nodeExporterScrape(t *testing.T, dir string) map[string]*dto.MetricFamily {
	t.Helper()
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus-node-exporter is required in CI (Debian's prometheus-node-exporter)")
		}
		t.Skip("prometheus-node-exporter not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory", dir, "--web.listen-address", addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				t.Fatalf("node_exporter /metrics: %s\n%s\nlog:\n%s", resp.Status, body, logs.String())
			}
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node_exporter did not answer on %s: %v\nlog:\n%s", addr, err, logs.String())
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing node_exporter's answer: %v\n%s", err, body)
	}
	cmd.Process.Kill()
	cmd.Wait() // logs complete
	if v := metricValue(mf, "node_textfile_scrape_error", nil); v != 0 {
		t.Errorf("node_textfile_scrape_error = %v, want 0; log:\n%s", v, logs.String())
	}
	if s := string(body) + logs.String(); strings.Contains(s, "collected before") || strings.Contains(s, "level=error") {
		t.Errorf("node_exporter reports errors reading %s:\n%s", dir, logs.String())
	}
	return mf
}
