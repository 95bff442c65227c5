package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// shutdownTimeout bounds how long in-flight requests may take after a signal.
const shutdownTimeout = 5 * time.Second

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// options are the parsed command-line flags.
type options struct {
	addr       string
	dataDir    string
	csvFiles   stringList
	date       string
	categories stringList
	apiJSON    string
	keys       stringList
	dailyLimit int64
	urlFile    string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ytemulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "listen `address` (port 0 picks a free port)")
	fs.StringVar(&o.dataDir, "data", "", "load every trending CSV and XX_category_id.json in `DIR`, one region per CSV")
	fs.Var(&o.csvFiles, "csv", "load one trending CSV `FILE` (repeatable; region from the file name)")
	fs.StringVar(&o.date, "date", "", "trending `DATE` to serve at start from every file (yy.dd.mm or yyyy-mm-dd; default: first in each file); POST /emulator/date with date=DATE changes it while running")
	fs.Var(&o.categories, "categories", "videoCategories.list answer `FILE` (repeatable; XX_category_id.json is region XX, any other name the default)")
	fs.StringVar(&o.apiJSON, "api-json", "", "`DIR` of recorded pyyoutube__*.json responses for search.list and channels.list")
	fs.Var(&o.keys, "key", "accept only this API `KEY` (repeatable; default: any key)")
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

func newLogger(w io.Writer) zerolog.Logger {
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
		}
	}
	return zerolog.New(w).With().Timestamp().Logger()
}

// run is the whole command: it returns the exit code. ctx is cancelled by the first signal;
// stopSignals restores default signal handling, so that a second signal kills the process.
func run(ctx context.Context, stopSignals func(), args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ytemulator: %v\nTry: ytemulator -h\n", err)
		return exitUsage
	}
	log := newLogger(stderr)

	srv := youtubetest.New()
	if err := load(srv, o, log); err != nil {
		log.Error().Err(err).Msg("cannot load data")
		return exitError
	}
	if len(o.keys) > 0 {
		srv.SetKeys(o.keys...)
	}
	srv.SetDailyLimit(o.dailyLimit)

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		log.Error().Err(err).Str("addr", o.addr).Msg("cannot listen")
		return exitError
	}
	url := "http://" + ln.Addr().String()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	if o.urlFile != "" {
		if err := writeFileAtomic(o.urlFile, url+"\n"); err != nil {
			log.Error().Err(err).Msg("cannot write url file")
			_ = hs.Close()
			return exitError
		}
		defer os.Remove(o.urlFile)
	}
	log.Info().Str("url", url).Strs("regions", srv.Regions()).Int64("daily_limit", o.dailyLimit).
		Int("keys", len(o.keys)).Msg("serving YouTube Data API emulator; client endpoint is url + \"/\"")

	select {
	case err := <-served:
		log.Error().Err(err).Msg("server stopped")
		return exitError
	case <-ctx.Done():
	}
	if stopSignals != nil {
		stopSignals()
	}
	log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("shutdown did not drain in time")
		_ = hs.Close()
	}
	log.Info().Int("calls", srv.TotalCalls()).Msg("stopped")
	return exitOK
}

var categoryFile = regexp.MustCompile(`^([A-Z]{2})_category_id\.json$`)

// load fills srv from the flags.
func load(srv *youtubetest.Server, o options, log zerolog.Logger) error {
	files := append([]string(nil), o.csvFiles...)
	categories := append([]string(nil), o.categories...)
	if o.dataDir != "" {
		entries, err := os.ReadDir(o.dataDir)
		if err != nil {
			return fmt.Errorf("cannot read --data directory: %w", err)
		}
		var found []string
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			name := e.Name()
			if _, ok := youtubetest.RegionFromFileName(name); ok {
				found = append(found, filepath.Join(o.dataDir, name))
			} else if strings.HasSuffix(name, "_category_id.json") {
				categories = append([]string{filepath.Join(o.dataDir, name)}, categories...)
			}
		}
		if len(found) == 0 {
			return fmt.Errorf("no trending CSV (yy.dd.mm_XX_videos.csv, XXvideos.csv, XX_youtube_trending_data.csv) in --data %s", o.dataDir)
		}
		sort.Strings(found)
		files = append(found, files...)
	}

	regions := map[string]string{} // region -> file
	for _, path := range files {
		region, videos, date, err := loadFile(srv, path, o.date)
		if err != nil {
			return err
		}
		if prev, ok := regions[region]; ok {
			return fmt.Errorf("region %s is in both %s and %s; load one file per region", region, prev, path)
		}
		regions[region] = path
		srv.SetChart(region, videos)
		log.Info().Str("region", region).Int("rows", len(videos)).Str("date", date).Str("file", path).Msg("loaded chart")
	}
	if len(files) == 0 {
		srv.SetChart("US", youtubetest.Sample())
		log.Info().Str("region", "US").Int("rows", youtubetest.SampleSize).Str("date", "").Str("file", "built-in synthetic sample").Msg("loaded chart")
		if len(categories) == 0 {
			if err := srv.SetCategories("", youtubetest.SampleCategories()); err != nil {
				return err
			}
		}
	}

	for _, path := range categories {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("cannot read --categories: %w", err)
		}
		region := ""
		if m := categoryFile.FindStringSubmatch(filepath.Base(path)); m != nil {
			region = m[1]
		}
		if err := srv.SetCategories(region, raw); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		log.Info().Str("region", region).Str("file", path).Msg("loaded categories")
	}

	if o.apiJSON != "" {
		read := func(name string) ([]byte, error) {
			b, err := os.ReadFile(filepath.Join(o.apiJSON, name))
			if err != nil {
				return nil, fmt.Errorf("cannot read --api-json file: %w", err)
			}
			return b, nil
		}
		p1, err := read("pyyoutube__search_search_by_keywords_p1.json")
		if err != nil {
			return err
		}
		p2, err := read("pyyoutube__search_search_by_keywords_p2.json")
		if err != nil {
			return err
		}
		if err := srv.SetSearchPages(p1, p2); err != nil {
			return err
		}
		ch, err := read("pyyoutube__channels_info_multiple.json")
		if err != nil {
			return err
		}
		if err := srv.SetChannels(ch); err != nil {
			return err
		}
		log.Info().Str("dir", o.apiJSON).Msg("loaded recorded search.list and channels.list responses")
	}
	return nil
}

// loadFile loads one CSV: its chart of date ("" = its first date) is served at once, and
// every date of it is loaded as recorded days (Server.LoadDays), so POST /emulator/date can
// switch the trending date while the emulator runs. It returns the date served.
func loadFile(srv *youtubetest.Server, path, date string) (region string, videos []*youtube.Video, served string, err error) {
	region, ok := youtubetest.RegionFromFileName(path)
	if !ok {
		return "", nil, "", fmt.Errorf("cannot load %s: no region in file name; expected yy.dd.mm_XX_videos.csv, XXvideos.csv or XX_youtube_trending_data.csv", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", nil, "", fmt.Errorf("cannot load trending CSV: %w", err)
	}
	defer f.Close()
	dates, charts, err := youtubetest.LoadCSVCharts(f, region)
	if err != nil {
		return "", nil, "", fmt.Errorf("%s: %w", path, err)
	}
	served = date
	if served == "" {
		served = dates[0]
	}
	for _, d := range dates {
		if d == served || (len(d) > len(served) && strings.HasPrefix(d, served+"T")) {
			videos = charts[d]
			break
		}
	}
	if videos == nil {
		return "", nil, "", fmt.Errorf("%s: trending date %q not in file; dates present: %s", path, served, strings.Join(dates, ", "))
	}
	if err := srv.LoadDays(region, dates, charts); err != nil {
		return "", nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return region, videos, served, nil
}

// writeFileAtomic writes data to path via a temporary file and a rename, so a reader never
// sees a partial URL.
func writeFileAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ytemulator-url-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
