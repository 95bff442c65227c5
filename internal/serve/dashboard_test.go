package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
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

// browser starts headless Chromium with a window w px wide.
func browser(t *testing.T, w int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browserPath(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(w, 1000))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

// clipped lists, in the page, what a reader cannot read whole: the page
// wider than the window, or an element with text whose content is wider
// than its box or that reaches past the window's right edge, unless it
// sits in a box meant to scroll (overflow-x auto or scroll).
const clipped = `(() => {
  const out = [], W = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > W) out.push("page is " + document.documentElement.scrollWidth + " px wide in a " + W + " px window");
  const scroller = (e) => { for (; e && e !== document.body; e = e.parentElement) if (/auto|scroll/.test(getComputedStyle(e).overflowX)) return true; return false; };
  for (const e of document.body.querySelectorAll("*")) {
    if (!e.textContent.trim() || e.closest("svg") && e.tagName !== "svg" || !e.getClientRects().length || scroller(e)) continue;
    const inline = getComputedStyle(e).display === "inline";
    if (!inline && e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > W + 1)
      out.push(e.tagName + (e.id ? "#" + e.id : "") + " " + JSON.stringify(e.textContent.trim().slice(0, 40)));
  }
  return out;
})()`

// TestDashboardInABrowser loads the dashboard in headless Chromium against
// a store filled by real runs (plus two failed GB runs), waits for the
// data and checks what a person would read: the region rows (late GB, its
// failures and reason cut at a word), bucket names and numbers, a run row,
// a chart row with rank changes, a search result, a video's views chart
// with a labelled y-axis at its own URL; at 1400 and 420 px wide no text
// is clipped. Screenshots go to $TRENDFETCH_ARTIFACTS (default the test's
// temp dir).
func TestDashboardInABrowser(t *testing.T) {
	db, lim := shared(t)
	db = failGB(t, db)
	f := start(t, db, lim, func(o *Options) {
		o.RateLimit = RateLimit{}
		o.Now = func() time.Time { return time.Now().Add(3 * time.Hour) }
		o.Regions = func(now time.Time) []Region {
			next := now.Add(time.Hour).UTC()
			return []Region{{Region: "US", Name: "United States", Schedule: new("every 2h0m0s"), NextRun: &next, Interval: 2 * time.Hour},
				{Region: "GB", Name: "United Kingdom", Schedule: new("every 1h0m0s"), NextRun: &next, Interval: time.Hour}}
		}
	})
	ctx := browser(t, 1400)
	dir := os.Getenv("TRENDFETCH_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	screenshot := func(ctx context.Context, name string) {
		t.Helper()
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", filepath.Join(dir, name))
	}
	noClipping := func(ctx context.Context, width string) {
		t.Helper()
		bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](clipped))
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Errorf("at %s wide, text clipped or past the window: %q", width, bad)
		}
	}

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
	healthText, quotaText, runsText, chartsText := text("#health"), text("#quota"), text("#runs"), text("#charts")
	late, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#health tr.late td:first-child b")].map((e) => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(late, []string{"GB"}) {
		t.Errorf("late regions %q, want GB only (its last success 3 h old, interval 1 h)", late)
	}
	want := []string{"United States", "success", "United Kingdom", "LATE", "failed", "videos.list for GB failed: Get", "units "}
	if !quota.DayStart(time.Now()).Equal(quota.DayStart(f.opts.Now())) {
		want = want[:len(want)-1] // the runs' units are of the Pacific day before the server's clock
	}
	for _, want := range want {
		if !strings.Contains(healthText, want) {
			t.Errorf("region rows lack %q:\n%s", want, healthText)
		}
	}
	// A long reason shows what failed and its cause, cut in the middle at a word.
	for what, rows := range map[string]string{"region rows": healthText, "recent runs": runsText} {
		if !strings.Contains(rows, "… ") || !strings.Contains(rows, " connection reset by peer") || strings.Contains(rows, "regionCode") {
			t.Errorf("%s: GB's long reason not shown as its start … its cause, URL as host and path:\n%s", what, rows)
		}
	}
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
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	// The video's own URL loads its history directly, at both widths.
	for _, w := range []int{1400, 420} {
		wctx := ctx
		if w != 1400 {
			wctx = browser(t, w)
		}
		if err := chromedp.Do(wctx, chromedp.EmulateViewport(int64(w), 1000), chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-loaded="true"]`)),
			chromedp.WaitReady(chromedp.CSS("#views-chart"))); err != nil {
			t.Fatalf("%s at %d px: %v", url, w, err)
		}
		ticks, err := chromedp.Run(wctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#views-chart text.tick")].map((e) => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		marks, err := chromedp.Run(wctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#views-chart g.change, #video ul.changes")].map((e) => e.textContent.trim()).join(" | ")`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(marks, "2026-08-27 YouTube change") || !strings.Contains(marks, "across 2026-08-27: YouTube changed view_count: views of every format counted at playback start") ||
			strings.Contains(marks, "2025-") {
			t.Errorf("views chart's marks of YouTube's changes (want 2026-08-27 only, the series from 2026-08-01): %q", marks)
		}
		if len(ticks) < 3 {
			t.Errorf("views chart y-axis labels %q, want min, max and a tick between", ticks)
		}
		noClipping(wctx, fmt.Sprint(w, " px"))
		screenshot(wctx, fmt.Sprintf("dashboard-%d.png", w))
	}
	if !strings.Contains(url, "?video=") {
		t.Errorf("a video's URL %q has no ?video=", url)
	}
	for _, want := range []string{"proj", "units", "search", "stats", "/ 9,500"} {
		if !strings.Contains(quotaText, want) {
			t.Errorf("quota section lacks %q:\n%s", want, quotaText)
		}
	}
	if !strings.Contains(runsText, "US") || !strings.Contains(runsText, "success") || !strings.Contains(runsText, "units=") || !strings.Contains(runsText, "gb-host-1") {
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
}

// gbReason is the reason of failGB's last run: longer than a row shows, a
// URL in the middle, the cause at the end (issue 40 item 22).
const gbReason = `videos.list for GB failed: Get "https://www.googleapis.com/youtube/v3/videos?chart=mostPopular&maxResults=50&part=snippet%2Cstatistics&regionCode=GB": ` +
	"upstream answered 500 for the chart of GB and then said the same thing again and again: read tcp 10.0.0.2:443: connection reset by peer"

// failGB copies db and records two failed GB runs after its success, the
// last with a reason longer than a row shows, and two statistics samples
// of the latest US chart's first video; it returns the copy.
func failGB(t *testing.T, db string) string {
	t.Helper()
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(t.TempDir(), "tf.db")
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, reason := range []string{"boom", gbReason} {
		id, err := st.StartRun(ctx, store.Run{Credential: "proj", Region: "GB", Units: map[string]int64{"units": 1}, Host: "gb-host-1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.FinishRun(ctx, store.Run{ID: id, Outcome: store.OutcomeFailed, Reason: reason, Units: map[string]int64{"units": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	// The video on top of the latest US chart: statistics samples before
	// and after 2026-08-27 (YouTube's change of view counting).
	last := youtubetest.Sample()[len(youtubetest.Sample())-1].Id
	for i, at := range []time.Time{time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)} {
		views := int64(1000 + 40000*i)
		if _, err := st.SaveSamples(ctx, []store.Sample{{VideoID: last, Views: &views}}, at); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestDashboardSaysWhenRateLimited: the dashboard spends one request per
// refresh, and when the API answers 429 it says so in a visible notice
// with the retry time instead of dropping data silently.
func TestDashboardSaysWhenRateLimited(t *testing.T) {
	db, lim := shared(t)
	clk := &clock{now: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}
	rl := NewCounter(2, time.Minute, clk.Now)
	f := start(t, db, lim, func(o *Options) { o.RateLimit = RateLimit{Limiter: rl, Limit: 2, Window: time.Minute, Key: "ip"} })

	ctx := browser(t, 1280)
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

// TestDashboardSendsTheToken: opened as /#token=..., the dashboard sends the
// token with its requests and shows the data; without it, the API's refusal.
func TestDashboardSendsTheToken(t *testing.T) {
	db, lim := shared(t)
	const token = "s3cret-token-0123456789"
	f := start(t, db, lim, func(o *Options) { o.Token = token })
	ctx := browser(t, 1280)
	for _, tc := range []struct{ fragment, want string }{{"#token=" + token, ""}, {"", "Cannot refresh: send Authorization"}} {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(f.url+"/"+tc.fragment),
			chromedp.Reload(),
			chromedp.WaitReady(chromedp.CSS(`body[data-loaded="true"]`)),
		); err != nil {
			t.Fatal(err)
		}
		notice, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("notice").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#health tr.region").length`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(notice, tc.want) || (tc.want == "") != (rows > 0) {
			t.Errorf("dashboard at /%s: notice %q, %d region rows", tc.fragment, notice, rows)
		}
	}
}

// TestFavicon: /favicon.ico answers an icon, cached, without a token.
func TestFavicon(t *testing.T) {
	db, lim := shared(t)
	f := start(t, db, lim, func(o *Options) { o.Token = "s3cret-token-0123456789" })
	resp, err := http.Get(f.url + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/x-icon" ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") || !bytes.HasPrefix(b, []byte{0, 0, 1, 0}) {
		t.Errorf("/favicon.ico: %d %q %q, %d bytes % x", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), len(b), b[:min(len(b), 4)])
	}
}
