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
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#q"), "synthetic"),
		chromedp.Click(chromedp.CSS("#search-form button")),
		chromedp.WaitReady(chromedp.CSS("#search li.hit")),
	); err != nil {
		t.Fatal(err)
	}
	searchText := text("#search")
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
	if !strings.Contains(searchText, "(synthetic)") {
		t.Errorf("search result:\n%s", searchText)
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
