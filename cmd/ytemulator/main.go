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
	if o.urlFile != "" {
		if err := writeURLFile(o.urlFile, url); err != nil {
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
	shutdown(hs, log)
	log.Info().Int("calls", srv.TotalCalls()).Msg("stopped")
	return 0
}

// writeURLFile writes url to path whole, then renames it into place: a
// reader never sees a partial URL.
func writeURLFile(path, url string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(url+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// shutdown drains hs within 5 s, then closes what is left.
func shutdown(hs *http.Server, log zerolog.Logger) {
	log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("shutdown did not drain in time")
		_ = hs.Close()
	}
}

var categoryFile = regexp.MustCompile(`^([A-Z]{2})_category_id\.json$`)

// load fills srv from the flags and returns the regions of the charts served, sorted.
func load(srv *youtubetest.Server, o options, log zerolog.Logger) ([]string, error) {
	files, categories := slices.Clone(o.csvFiles), slices.Clone(o.categories)
	if o.dataDir != "" {
		found, cats, err := scanDataDir(o.dataDir)
		if err != nil {
			return nil, err
		}
		files, categories = append(found, files...), append(cats, categories...)
	}
	byRegion, err := loadCharts(srv, files, o.date, log)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		loadSample(srv, byRegion, len(categories) == 0, log)
	}
	if err := loadCategories(srv, categories, log); err != nil {
		return nil, err
	}
	if o.apiJSON != "" {
		if err := loadAPIJSON(srv, o.apiJSON, log); err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(byRegion)), nil
}

// scanDataDir returns the trending CSVs and category files of a --data
// directory, each sorted by name (os.ReadDir sorts).
func scanDataDir(dir string) (charts, categories []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read --data directory: %w", err)
	}
	for _, e := range entries {
		switch _, isChart := youtubetest.RegionFromFileName(e.Name()); {
		case e.IsDir():
		case isChart:
			charts = append(charts, filepath.Join(dir, e.Name()))
		case strings.HasSuffix(e.Name(), "_category_id.json"):
			categories = append(categories, filepath.Join(dir, e.Name()))
		}
	}
	if len(charts) == 0 {
		return nil, nil, fmt.Errorf("no trending CSV (yy.dd.mm_XX_videos.csv, XXvideos.csv, XX_youtube_trending_data.csv) in --data %s", dir)
	}
	return charts, categories, nil
}

// loadCharts loads every date of each file (POST /emulator/date switches) and serves the chart of
// date (default: the file's first) at once; it returns region -> file.
func loadCharts(srv *youtubetest.Server, files []string, date string, log zerolog.Logger) (map[string]string, error) {
	byRegion := map[string]string{}
	for _, path := range files {
		region, dates, err := srv.LoadDaysFile(path)
		if err != nil {
			return nil, err
		}
		videos := srv.DayChart(region, cmp.Or(date, dates[0]))
		if videos == nil {
			return nil, fmt.Errorf("%s: trending date %q not in file; dates present: %s", path, date, strings.Join(dates, ", "))
		}
		if prev, ok := byRegion[region]; ok {
			return nil, fmt.Errorf("region %s is in both %s and %s; load one file per region", region, prev, path)
		}
		byRegion[region] = path
		srv.SetChart(region, videos)
		log.Info().Str("region", region).Int("rows", len(videos)).Str("date", cmp.Or(date, dates[0])).Str("file", path).Msg("loaded chart")
	}
	return byRegion, nil
}

// loadSample serves the built-in synthetic US chart (and its categories
// when none are given) when no file is.
func loadSample(srv *youtubetest.Server, byRegion map[string]string, withCategories bool, log zerolog.Logger) {
	byRegion["US"] = "built-in synthetic sample"
	srv.SetChart("US", youtubetest.Sample())
	log.Info().Str("region", "US").Int("rows", youtubetest.SampleSize).Str("date", "").Str("file", byRegion["US"]).Msg("loaded chart")
	if withCategories {
		_ = srv.SetCategories("", youtubetest.SampleCategories()) // valid: it has items
	}
}

// loadCategories loads videoCategories.list answers, per region when the
// file is named XX_category_id.json, else the default.
func loadCategories(srv *youtubetest.Server, categories []string, log zerolog.Logger) error {
	for _, path := range categories {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("cannot read --categories: %w", err)
		}
		region := append(categoryFile.FindStringSubmatch(filepath.Base(path)), "", "")[1] // "" = the default
		if err := srv.SetCategories(region, raw); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		log.Info().Str("region", region).Str("file", path).Msg("loaded categories")
	}
	return nil
}

// loadAPIJSON loads the recorded search.list pages and channels.list
// answer of an --api-json directory.
func loadAPIJSON(srv *youtubetest.Server, dir string, log zerolog.Logger) error {
	var raw [3][]byte
	for i, name := range []string{"search_search_by_keywords_p1", "search_search_by_keywords_p2", "channels_info_multiple"} {
		var err error
		if raw[i], err = os.ReadFile(filepath.Join(dir, "pyyoutube__"+name+".json")); err != nil {
			return fmt.Errorf("cannot read --api-json file: %w", err)
		}
	}
	if err := errors.Join(srv.SetSearchPages(raw[0], raw[1]), srv.SetChannels(raw[2])); err != nil {
		return err
	}
	log.Info().Str("dir", dir).Msg("loaded recorded search.list and channels.list responses")
	return nil
}
