// Package youtubetest is an in-memory emulator of the YouTube Data API v3 in the style of
// net/http/httptest (docs/design.md §7): the real google.golang.org/api/youtube/v3 client talks
// to it unchanged. It serves charts, id lists, videos:batchGetStats, categories, search and
// channels from recorded data or the synthetic Sample, counts quota units per key and bucket
// as Google does, answers Google's error bodies and can inject failures.
//
//	srv := youtubetest.New()
//	srv.SetChart("US", youtubetest.Sample())
//	svc, err := youtubetest.NewService(ctx, srv.StartTest(t), "test-key")
//	// svc.Videos.List(...).Chart("mostPopular").RegionCode("US").Do(); srv.Units("test-key") == 1
//
// The command cmd/ytemulator serves a Server for demos; the test helpers take the TB
// interface so that it does not link package testing.
package youtubetest
