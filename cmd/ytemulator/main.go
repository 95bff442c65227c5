// Command ytemulator serves the YouTube Data API v3 emulator (package
// internal/fetch/youtubetest) on a loopback address for demos and manual tests
// (docs/operations.md, "The emulator"; `ytemulator -h` lists the flags).
//
// Without --data or --csv it serves the synthetic youtubetest.Sample as region US with its
// categories. Each CSV is one region, served from its --date (default: its first date); all
// its dates are loaded, so POST /emulator/date switches the date while it runs. Once
// listening it logs the base URL and writes it to --url-file (removed on exit). Keys are
// never logged. SIGINT or SIGTERM drains requests and exits 0; a second signal exits at
// once. Exit codes: 0 clean shutdown, 1 runtime error (data, address), 2 usage error.
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
