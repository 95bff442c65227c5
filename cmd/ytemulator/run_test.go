package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitURL polls for the URL file written by the command.
func waitURL(t *testing.T, path string, done <-chan int) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a liveness bound: loading the recordings takes ~14 s under -race
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		select {
		case code := <-done:
			t.Fatalf("command exited with %d before listening", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("no URL file after 2m")
	return ""
}

// startRun runs the command in-process and returns its URL, its exit channel and a cancel
// func standing in for SIGTERM.
func startRun(t *testing.T, args ...string) (url string, done chan int, stop func(), stderr *syncBuffer) {
	t.Helper()
	urlFile := filepath.Join(t.TempDir(), "url")
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &syncBuffer{}
	done = make(chan int, 1)
	go func() { done <- run(ctx, func() {}, append(args, "--url-file", urlFile), stderr) }()
	t.Cleanup(cancel)
	url = waitURL(t, urlFile, done)
	return url, done, cancel, stderr
}

func TestServesSampleByDefault(t *testing.T) {
	url, done, stop, stderr := startRun(t, "--addr", "127.0.0.1:0", "--key", "secret-demo-key", "--daily-limit", "3")
	ctx := context.Background()
	svc, err := youtubetest.NewService(ctx, url, "secret-demo-key")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := svc.Videos.List([]string{"snippet"}).Chart("mostPopular").RegionCode("US").MaxResults(50).Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 50 || resp.NextPageToken == "" {
		t.Errorf("page 1: %d items, next %q", len(resp.Items), resp.NextPageToken)
	}
	cats, err := svc.VideoCategories.List([]string{"snippet"}).RegionCode("US").Do()
	if err != nil || len(cats.Items) == 0 {
		t.Errorf("categories: %v", err)
	}
	bad, err := youtubetest.NewService(ctx, url, "wrong")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Videos.List([]string{"id"}).Chart("mostPopular").Do()
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) || gerr.Code != 400 {
		t.Errorf("wrong key: %v", err)
	}
	svc.Videos.List([]string{"id"}).Chart("mostPopular").Do() // unit 3
	_, err = svc.Videos.List([]string{"id"}).Chart("mostPopular").Do()
	if !errors.As(err, &gerr) || gerr.Code != 403 {
		t.Errorf("over --daily-limit: %v", err)
	}

	stop()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d, want 0; stderr:\n%s", code, stderr)
	}
	log := stderr.String()
	if !strings.Contains(log, `"region":"US"`) || !strings.Contains(log, `"rows":60`) {
		t.Errorf("no per-region log line:\n%s", log)
	}
	if strings.Contains(log, "secret-demo-key") {
		t.Errorf("the API key was logged:\n%s", log)
	}
}

func TestServesDataDir(t *testing.T) {
	data := youtubetest.DataDir(t)
	url, done, stop, stderr := startRun(t, "--data", filepath.Join(data, "kaggle_youtube_new_2017"), "--date", "17.15.11",
		"--api-json", filepath.Join(data, "api_json"))
	svc, err := youtubetest.NewService(context.Background(), url, "k")
	if err != nil {
		t.Fatal(err)
	}
	for region, want := range map[string]int{"US": 200, "FR": 200, "CA": 200, "GB": 199} {
		n := 0
		err := svc.Videos.List([]string{"id"}).Chart("mostPopular").RegionCode(region).MaxResults(50).
			Pages(context.Background(), func(r *youtube.VideoListResponse) error { n += len(r.Items); return nil })
		if err != nil || n != want {
			t.Errorf("%s: %d videos, err %v; want %d", region, n, err, want)
		}
	}
	cats, err := svc.VideoCategories.List([]string{"snippet"}).RegionCode("US").Do()
	if err != nil || len(cats.Items) != 32 {
		t.Errorf("US categories: %v", err)
	}
	if _, err := svc.Search.List([]string{"snippet"}).Q("x").Do(); err != nil {
		t.Errorf("search: %v", err)
	}
	// The trending date changes while it runs.
	first, err := svc.Videos.List([]string{"statistics"}).Chart("mostPopular").RegionCode("US").Do()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.PostForm(url+youtubetest.ControlPath, neturl.Values{"date": {"17.16.11"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	next, err := svc.Videos.List([]string{"statistics"}).Chart("mostPopular").RegionCode("US").Do()
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"2017-11-16"`) ||
		(next.Items[0].Id == first.Items[0].Id && next.Items[0].Statistics.ViewCount == first.Items[0].Statistics.ViewCount) {
		t.Errorf("date control: %d %s; chart unchanged or %v", resp.StatusCode, body, err)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if log := stderr.String(); strings.Count(log, `"message":"loaded chart"`) != 4 || !strings.Contains(log, `"date":"17.15.11"`) {
		t.Errorf("log:\n%s", log)
	}
}

func TestUsageAndLoadErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"--daily-limit", "-1"}, 2, "--daily-limit"},
		{[]string{"--data", filepath.Join(t.TempDir(), "missing")}, 1, "cannot read --data directory"},
		{[]string{"--csv", "nothing.csv"}, 1, "no region in file name"},
		{[]string{"--addr", "256.0.0.1:0"}, 1, "cannot listen"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), func() {}, tt.args, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}

// TestSIGTERM builds the binary and checks that SIGTERM gives a clean exit 0 and removes the
// URL file.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ytemulator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	urlFile := filepath.Join(dir, "url")
	cmd := exec.Command(bin, "--url-file", urlFile)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		done <- cmd.ProcessState.ExitCode()
	}()
	waitURL(t, urlFile, done)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no exit 10s after SIGTERM")
	}
	if _, err := os.Stat(urlFile); !os.IsNotExist(err) {
		t.Errorf("URL file left behind: %v", err)
	}
}
