// Package youtubetest is an in-memory emulator of the YouTube Data API v3, in the style of
// net/http/httptest, for tests and demos of trendfetch.
//
// A Server serves videos.list (chart=mostPopular with regionCode, videoCategoryId,
// maxResults and real-looking page tokens; id lists), videoCategories.list, search.list and
// channels.list in the real API's JSON shape, so the real google.golang.org/api/youtube/v3
// client is used unchanged against it. It counts quota units per API key as Google does,
// answers Google's error bodies (quotaExceeded, videoChartNotFound, keyInvalid, 5xx) and
// can inject failures. Charts come from recorded trending CSVs (LoadCSV, LoadCSVFile;
// the recorded data of docs/design.md §7, found by FindDataDir) or from the synthetic Sample.
//
// In a test:
//
//	srv := youtubetest.New()
//	srv.SetChart("US", youtubetest.Sample())
//	url := srv.StartTest(t)
//	svc, err := youtubetest.NewService(ctx, url, "test-key")
//	// svc.Videos.List(...).Chart("mostPopular").RegionCode("US").MaxResults(50).Do()
//	// srv.Units("test-key") == 1
//
// Do not add option.WithHTTPClient to the client options: the library then ignores
// option.WithAPIKey and sends no key.
//
// The command cmd/ytemulator serves a Server on a loopback address for demos; it links
// this package but not package testing (the test helpers take the TB interface).
package youtubetest
