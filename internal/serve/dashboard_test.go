package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// browserPath finds headless Chromium (Debian's chromium package; .ci/run
// installs it). Without one the test is skipped, except under CI=true where
// it fails.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found (CI=true): apt-get install -y chromium")
	}
	t.Skip("no Chromium found: apt-get install -y chromium")
	return ""
}

// TestDashboardInABrowser loads the dashboard in headless Chromium against
// a store filled by real runs, waits for the data and checks what a person
// would read: bucket names and numbers, a run row, a chart row with rank
// changes, a search result and a video's views chart. The screenshot is
// written to $TRENDFETCH_ARTIFACTS (default the test's temp dir).
func TestDashboardInABrowser(t *testing.T) {
	chrome := browserPath(t)
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{} })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 2000))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	sample := youtubetest.Sample()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.url+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-loaded="true"]`)),
	); err != nil {
		t.Fatal(err)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	quotaText, runsText, chartsText := text("#quota"), text("#runs"), text("#charts")
	if _, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#attribution a[href="https://www.youtube.com/t/terms"]`), "href")); err != nil {
		t.Fatalf("no link to YouTube's Terms of Service: %v", err)
	}
	footer, chartsAll := text("#attribution"), text("body")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#q"), "synthetic"),
		chromedp.Click(chromedp.CSS("#search-form button")),
		chromedp.WaitReady(chromedp.CSS("#search li.hit")),
	); err != nil {
		t.Fatal(err)
	}
	searchText, markText := text("#search"), text("#search li.hit mark")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#charts tr.entry a")),
		chromedp.WaitReady(chromedp.CSS("#views-chart")),
	); err != nil {
		t.Fatal(err)
	}
	videoTitle := text("#video-title")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"proj", "units", "search", "stats", "/ 9,500"} {
		if !strings.Contains(quotaText, want) {
			t.Errorf("quota section lacks %q:\n%s", want, quotaText)
		}
	}
	if !strings.Contains(runsText, "US") || !strings.Contains(runsText, "success") || !strings.Contains(runsText, "units=") {
		t.Errorf("runs section:\n%s", runsText)
	}
	// The latest US chart is the sample reversed: its first row moved up 59.
	last := sample[len(sample)-1].Snippet.Title
	if !strings.Contains(chartsText, last) || !strings.Contains(chartsText, "▲59") || !strings.Contains(chartsText, "United Kingdom") {
		t.Errorf("charts section lacks %q with ▲59 or GB:\n%.2000s", last, chartsText)
	}
	if !strings.Contains(footer, "YouTube") || !strings.Contains(footer, "computed by trendfetch") {
		t.Errorf("attribution footer:\n%s", footer)
	}
	if !strings.Contains(chartsAll, "rank change") || !strings.Contains(chartsText, "captured ") || !strings.Contains(chartsText, "(computed by trendfetch)") {
		t.Errorf("charts do not label rank changes as computed or lack capture times:\n%.600s", chartsText)
	}
	if !strings.Contains(searchText, "(synthetic)") || !strings.Contains(searchText, "computed by trendfetch") {
		t.Errorf("search result:\n%s", searchText)
	}
	if !strings.EqualFold(markText, "synthetic") {
		t.Errorf("search result's first highlight %q, want the term searched (synthetic)", markText)
	}
	if videoTitle != last {
		t.Errorf("video page title %q, want %q", videoTitle, last)
	}
	dir := os.Getenv("TRENDFETCH_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
}

// TestDashboardSaysWhenRateLimited: the dashboard spends one request per
// refresh, and when the API answers 429 it says so in a visible notice
// with the retry time instead of dropping data silently.
func TestDashboardSaysWhenRateLimited(t *testing.T) {
	chrome := browserPath(t)
	db, lim := shared(t)
	clk := &clock{now: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}
	rl, err := NewCounter(2, time.Minute, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{Limiter: rl, Limit: 2, Window: time.Minute, Key: "ip"} })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()
	// Load (request 1 of 2), one search (2 of 2), a second search: 429.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.url+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-loaded="true"]`)),
		chromedp.WaitReady(chromedp.CSS(`#charts tr.entry`)),
		chromedp.SendKeys(chromedp.CSS("#q"), "synthetic"),
		chromedp.Click(chromedp.CSS("#search-form button")),
		chromedp.WaitReady(chromedp.CSS("#search li.hit")),
		chromedp.Click(chromedp.CSS("#search-form button")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	); err != nil {
		t.Fatal(err)
	}
	notice, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#notice")))
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("notice").hidden`))
	if err != nil {
		t.Fatal(err)
	}
	if hidden || !strings.Contains(notice, "Rate limited") || !strings.Contains(notice, "next try is in") {
		t.Errorf("notice when rate limited (hidden %v): %q", hidden, notice)
	}
}
