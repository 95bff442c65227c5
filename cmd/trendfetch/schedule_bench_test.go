package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/regions"
)

// BenchmarkScheduleMemory runs `trendfetch schedule` (SQLite store and
// quota, 20 regions every second, no stagger, charts of 1 to 60 videos) against the emulator until it
// has finished 1,100 runs, and reports the process's resident memory after
// its first 100 runs and after 1,100 (issue 42: within 10%), read from
// /proc/PID/status. Each iteration is a fresh process and database.
func BenchmarkScheduleMemory(b *testing.B) {
	const first, last = 100, 1100
	list := regions.All()[:20]
	emu := youtubetest.New()
	for _, r := range list {
		emu.SetChart(r, youtubetest.Sample())
	}
	url := emu.StartTest(b)
	var rss100, rss1100 float64
	for b.Loop() {
		at := scheduleRSS(b, emu, url, list, first, last)
		rss100, rss1100 = rss100+at[0], rss1100+at[1]
	}
	n := float64(b.N)
	b.ReportMetric(rss100/n, "rss100_MB")
	b.ReportMetric(rss1100/n, "rss1100_MB")
	b.ReportMetric(100*(rss1100/rss100-1), "growth_%")
}

// scheduleRSS starts `schedule` in a fresh sandbox and returns its VmRSS in
// MB once it has logged each count of finished runs, then stops it. The
// charts' length changes every 20 runs (1 to 60 videos), so that pages of
// lengths not saved before keep coming, as with real charts (a chart's last
// page, the channels of a page).
func scheduleRSS(b *testing.B, emu *youtubetest.Server, url string, list []string, counts ...int) []float64 {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "trendfetch.yaml")
	yaml := "regions: [" + strings.Join(list, ", ") + "]\nschedule:\n  every: 1s\n  stagger: 0s\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--config", cfg, "--api-endpoint", url,
		"--database", filepath.Join(dir, "trendfetch.db"), "schedule")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "YOUTUBE_API_KEY=k", "TRENDFETCH_LOG_FORMAT=json"}
	logs, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(os.Interrupt)
	var out []float64
	runs, sc := 0, bufio.NewScanner(logs)
	for len(out) < len(counts) && sc.Scan() {
		if line := sc.Text(); strings.Contains(line, `"message":"run finished"`) {
			if !strings.Contains(line, `"outcome":"success"`) {
				b.Fatalf("run %d: %s", runs+1, line)
			}
			emu.SetChart(logField(line, "region"), youtubetest.Sample()[:1+runs/20%youtubetest.SampleSize])
			if runs++; runs == counts[len(out)] {
				out = append(out, vmRSS(b, cmd.Process.Pid))
			}
		}
	}
	if len(out) < len(counts) {
		b.Fatalf("schedule ended after %d runs: %v", runs, sc.Err())
	}
	go func() { // drain: the process must not block on its log
		for sc.Scan() {
		}
	}()
	return out
}

// logField is the string value of key in a JSON log line ("" when absent).
func logField(line, key string) string {
	var ev map[string]any
	_ = json.Unmarshal([]byte(line), &ev)
	v, _ := ev[key].(string)
	return v
}

// vmRSS is pid's resident set in MB (/proc/PID/status VmRSS).
func vmRSS(b *testing.B, pid int) float64 {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
