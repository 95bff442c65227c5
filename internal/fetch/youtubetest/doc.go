// Package youtubetest is an in-memory, httptest-style emulator of the YouTube Data API v3 that the
// real google.golang.org/api/youtube/v3 client talks to unchanged (docs/design.md §7).
//
//	srv := youtubetest.New()
//	srv.SetChart("US", youtubetest.Sample())
//	svc, err := youtubetest.NewService(ctx, srv.StartTest(t), "test-key")
//	// svc.Videos.List(...).Chart("mostPopular").RegionCode("US").Do(); srv.Units("test-key") == 1
//
// The command cmd/ytemulator serves a Server for demos; the test helpers take the TB
// interface so that it does not link package testing.
package youtubetest
