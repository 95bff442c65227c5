// Command ytemulator serves the YouTube Data API v3 emulator (package internal/fetch/youtubetest)
// on a loopback address for demos and manual tests: docs/operations.md, "The emulator", says what
// it loads, how it stops and its exit codes; `ytemulator -h` lists the flags.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, stop, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed command-line flags.
type options struct {
	addr, dataDir, date, apiJSON, urlFile string
	csvFiles, categories, keys            []string
	dailyLimit                            int64
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ytemulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := func(name, usage string, l *[]string) { // a repeatable flag
		fs.Func(name, usage, func(v string) error { *l = append(*l, v); return nil })
	}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "listen `address` (port 0 picks a free port)")
	fs.StringVar(&o.dataDir, "data", "", "load every trending CSV and XX_category_id.json in `DIR`, one region per CSV")
	list("csv", "load one trending CSV `FILE` (repeatable; region from the file name)", &o.csvFiles)
	fs.StringVar(&o.date, "date", "", "trending `DATE` to serve at start from every file (yy.dd.mm or yyyy-mm-dd; default: first in each file); POST /emulator/date with date=DATE changes it while running")
	list("categories", "videoCategories.list answer `FILE` (repeatable; XX_category_id.json is region XX, any other name the default)", &o.categories)
	fs.StringVar(&o.apiJSON, "api-json", "", "`DIR` of recorded pyyoutube__*.json responses for search.list and channels.list")
	list("key", "accept only this API `KEY` (repeatable; default: any key)", &o.keys)
	fs.Int64Var(&o.dailyLimit, "daily-limit", 0, "quota `units` per API key before 403 quotaExceeded (0 = unlimited)")
	fs.StringVar(&o.urlFile, "url-file", "", "write the base URL to `PATH` once listening (removed on exit)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q; all options are flags", fs.Arg(0))
	}
	if o.dailyLimit < 0 {
		return o, fmt.Errorf("--daily-limit %d: must be 0 (unlimited) or positive", o.dailyLimit)
	}
	return o, nil
}

// run is the whole command: it returns the exit code. ctx is cancelled by the first signal;
// stopSignals restores default signal handling, so that a second signal kills the process.
func run(ctx context.Context, stopSignals func(), args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintf(stderr, "ytemulator: %v\nTry: ytemulator -h\n", err)
		return 2
	}
	log := zerolog.New(stderr).With().Timestamp().Logger()
	if f, ok := stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		log = log.Output(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly})
	}
	srv := youtubetest.New()
	srv.SetKeys(o.keys...)
	srv.SetDailyLimit(o.dailyLimit)
	regions, err := load(srv, o, log)
	if err != nil {
		log.Error().Err(err).Msg("cannot load data")
		return 1
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		log.Error().Err(err).Str("addr", o.addr).Msg("cannot listen")
		return 1
	}
	url := "http://" + ln.Addr().String()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if o.urlFile != "" { // written whole, then renamed: a reader never sees a partial URL
		tmp := o.urlFile + ".tmp"
		err := os.WriteFile(tmp, []byte(url+"\n"), 0o644)
		if err == nil {
			err = os.Rename(tmp, o.urlFile)
		}
		if err != nil {
			log.Error().Err(err).Msg("cannot write url file")
			_ = hs.Close()
			return 1
		}
		defer os.Remove(o.urlFile)
	}
	log.Info().Str("url", url).Strs("regions", regions).Int64("daily_limit", o.dailyLimit).
		Int("keys", len(o.keys)).Msg("serving YouTube Data API emulator; client endpoint is url + \"/\"")

	select {
	case err := <-served:
		log.Error().Err(err).Msg("server stopped")
		return 1
	case <-ctx.Done():
	}
	stopSignals()
	log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the drain bound
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("shutdown did not drain in time")
		_ = hs.Close()
	}
	log.Info().Int("calls", srv.TotalCalls()).Msg("stopped")
	return 0
}

var categoryFile = regexp.MustCompile(`^([A-Z]{2})_category_id\.json$`)

// load fills srv from the flags and returns the regions of the charts served, sorted.
func load(srv *youtubetest.Server, o options, log zerolog.Logger) (regions []string, err error) {
	files, categories := slices.Clone(o.csvFiles), slices.Clone(o.categories)
	if o.dataDir != "" {
		entries, err := os.ReadDir(o.dataDir)
		if err != nil {
			return nil, fmt.Errorf("cannot read --data directory: %w", err)
		}
		var found []string
		for _, e := range entries {
			if _, ok := youtubetest.RegionFromFileName(e.Name()); ok && !e.IsDir() {
				found = append(found, filepath.Join(o.dataDir, e.Name()))
			} else if strings.HasSuffix(e.Name(), "_category_id.json") && !e.IsDir() {
				categories = append([]string{filepath.Join(o.dataDir, e.Name())}, categories...)
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("no trending CSV (yy.dd.mm_XX_videos.csv, XXvideos.csv, XX_youtube_trending_data.csv) in --data %s", o.dataDir)
		}
		files = append(found, files...) // os.ReadDir sorts by name
	}
	byRegion := map[string]string{} // region -> file
	for _, path := range files {
		// Every date is loaded (POST /emulator/date switches), the chart of --date served at once.
		region, dates, err := srv.LoadDaysFile(path)
		if err != nil {
			return nil, err
		}
		videos := srv.DayChart(region, cmp.Or(o.date, dates[0]))
		if videos == nil {
			return nil, fmt.Errorf("%s: trending date %q not in file; dates present: %s", path, o.date, strings.Join(dates, ", "))
		}
		if prev, ok := byRegion[region]; ok {
			return nil, fmt.Errorf("region %s is in both %s and %s; load one file per region", region, prev, path)
		}
		byRegion[region] = path
		srv.SetChart(region, videos)
		log.Info().Str("region", region).Int("rows", len(videos)).Str("date", cmp.Or(o.date, dates[0])).Str("file", path).Msg("loaded chart")
	}
	if len(files) == 0 {
		byRegion["US"] = "built-in synthetic sample"
		srv.SetChart("US", youtubetest.Sample())
		log.Info().Str("region", "US").Int("rows", youtubetest.SampleSize).Str("date", "").Str("file", byRegion["US"]).Msg("loaded chart")
		if len(categories) == 0 {
			_ = srv.SetCategories("", youtubetest.SampleCategories()) // valid: it has items
		}
	}
	for _, path := range categories {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cannot read --categories: %w", err)
		}
		region := append(categoryFile.FindStringSubmatch(filepath.Base(path)), "", "")[1] // "" = the default
		if err := srv.SetCategories(region, raw); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		log.Info().Str("region", region).Str("file", path).Msg("loaded categories")
	}
	if o.apiJSON != "" {
		var raw [3][]byte
		for i, name := range []string{"search_search_by_keywords_p1", "search_search_by_keywords_p2", "channels_info_multiple"} {
			if raw[i], err = os.ReadFile(filepath.Join(o.apiJSON, "pyyoutube__"+name+".json")); err != nil {
				return nil, fmt.Errorf("cannot read --api-json file: %w", err)
			}
		}
		if err := errors.Join(srv.SetSearchPages(raw[0], raw[1]), srv.SetChannels(raw[2])); err != nil {
			return nil, err
		}
		log.Info().Str("dir", o.apiJSON).Msg("loaded recorded search.list and channels.list responses")
	}
	return slices.Sorted(maps.Keys(byRegion)), nil
}
