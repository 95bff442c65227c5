// Command ytemulator serves the YouTube Data API v3 emulator (package
// internal/fetch/youtubetest) on a loopback address for demos and manual testing.
//
// Usage:
//
//	ytemulator [--addr 127.0.0.1:0] [--data DIR] [--csv FILE]... [--date DATE]
//	           [--categories FILE]... [--api-json DIR] [--key KEY]... [--daily-limit N]
//	           [--url-file PATH]
//
// --data DIR loads every recorded trending CSV in DIR (yy.dd.mm_XX_videos.csv,
// XXvideos.csv, XX_youtube_trending_data.csv), one region each, and every
// XX_category_id.json there (nonUS_category_id.json, or any other name, becomes the default
// for regions without their own). --csv adds single files. --date picks the trending date
// (yy.dd.mm, or yyyy-mm-dd for the 2020 files) in every file; by default the first date of
// each file. With no --data and no --csv it serves the synthetic youtubetest.Sample() as
// region US with sample categories. --api-json DIR loads the recorded search.list pages and
// channels.list answer (pyyoutube__search_search_by_keywords_p1/p2.json,
// pyyoutube__channels_info_multiple.json). --key restricts the accepted API keys (others get
// keyInvalid); keys are never logged. --daily-limit sets the units per key per emulator
// lifetime (0 = unlimited).
//
// Once listening it logs the base URL and writes it to --url-file (removed again on exit),
// so a Makefile can point trendfetch at it with `--endpoint $(cat FILE)/`. It logs one line
// per loaded region to stderr and exits 0 on SIGINT or SIGTERM after draining requests; a
// second signal exits at once. Exit codes: 0 clean shutdown, 1 runtime error (data cannot be
// loaded, address in use), 2 usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, stop, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}
