package youtubetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/api/youtube/v3"
)

// csvFormat is one of the recorded trending CSV layouts (docs/design.md §7).
type csvFormat int

const (
	// format2018 is the DataSnaek scraper layout (api_snapshot_2018-11-01) and the rsrishav
	// 2020 layout, which has the same columns with ISO trending dates.
	format2018 csvFormat = iota + 1
	// format2017 is the Kaggle "youtube-new" layout of 2017 (no channelId).
	format2017
)

var (
	header2018 = []string{"video_id", "title", "publishedAt", "channelId", "channelTitle", "categoryId",
		"trending_date", "tags", "view_count", "likes", "dislikes", "comment_count", "thumbnail_link",
		"comments_disabled", "ratings_disabled", "description"}
	header2017 = []string{"video_id", "trending_date", "title", "channel_title", "category_id",
		"publish_time", "tags", "views", "likes", "dislikes", "comment_count", "thumbnail_link",
		"comments_disabled", "ratings_disabled", "video_error_or_removed", "description"}
)

// csvRow is one parsed record with the line it started on.
type csvRow struct {
	line   int
	fields map[string]string
}

// readCSV reads a whole trending CSV, detects its format from the header and returns the
// records with their line numbers. Errors name the line.
func readCSV(r io.Reader) (csvFormat, []csvRow, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read trending CSV: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	header, err := csv.NewReader(bytes.NewReader(data)).Read()
	if err == io.EOF {
		return 0, nil, errors.New("cannot read trending CSV: empty input, expected a header line")
	}
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read trending CSV header: %w", err)
	}
	var format csvFormat
	switch base := exportBase(header); {
	case slices.Equal(base, header2018):
		format = format2018
	case slices.Equal(base, header2017):
		format = format2017
	default:
		return 0, nil, fmt.Errorf("cannot read trending CSV: line 1: unknown header %q; expected the 2018 scraper columns (%s) or the 2017 Kaggle columns (%s)",
			strings.Join(header, ","), strings.Join(header2018, ","), strings.Join(header2017, ","))
	}
	if format == format2018 {
		data = keepQuotedCRLF(data)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	// The 2017 Kaggle files write tags as "a"|"b" without quoting the field, which RFC 4180
	// forbids; LazyQuotes reads them as Python's csv module (which wrote them) does. The 2018
	// and 2020 files quote every field and are read strictly.
	cr.LazyQuotes = format == format2017
	if _, err := cr.Read(); err != nil {
		return 0, nil, fmt.Errorf("cannot read trending CSV header: %w", err)
	}
	var rows []csvRow
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// *csv.ParseError already carries "record on line N".
			return 0, nil, fmt.Errorf("cannot read trending CSV: %w", err)
		}
		line, _ := cr.FieldPos(0)
		m := make(map[string]string, len(header))
		for i, h := range header {
			m[h] = rec[i]
		}
		rows = append(rows, csvRow{line: line, fields: m})
	}
	return format, rows, nil
}

// exportExtra are the columns `trendfetch export --every capture` appends to
// either layout; they are read past (row order is rank order).
var exportExtra = []string{"captured_at", "rank"}

// keepQuotedCRLF returns data with every CRLF inside a quoted field written
// CR CR LF, so that encoding/csv, which turns a line's closing CRLF into LF
// (also inside a quoted field), gives back the CRLF as recorded: the 2020
// files keep descriptions' line breaks as CRLF. Only for files that quote
// strictly (the 2018 format): quote parity tells inside from outside. data
// is returned as is when it holds no CR.
func keepQuotedCRLF(data []byte) []byte {
	if bytes.IndexByte(data, '\r') < 0 {
		return data
	}
	out := make([]byte, 0, len(data)+len(data)/64)
	quoted := false
	for i, c := range data {
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\r' && quoted && i+1 < len(data) && data[i+1] == '\n':
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}

// exportBase returns header without exportExtra at its end.
func exportBase(header []string) []string {
	if n := len(header) - len(exportExtra); n > 0 && slices.Equal(header[n:], exportExtra) {
		return header[:n]
	}
	return header
}

// matchDate reports whether a file's trending_date value equals the wanted one. An ISO value
// ("2020-08-12T00:00:00Z") also matches its date alone ("2020-08-12").
func matchDate(value, want string) bool {
	return value == want || (len(value) > len(want) && strings.HasPrefix(value, want+"T"))
}

// LoadCSV parses a recorded trending CSV and returns the chart of one trending date as
// youtube.Video values, in file order: row 1 of that date is chart rank 1 (the scraper followed
// nextPageToken, so row order is rank order; docs/design.md §7).
//
// The format is detected from the header: the 2018 scraper columns (also used, with ISO
// dates and "[None]" for no tags, by the rsrishav 2020 files) or the 2017 Kaggle columns.
// trendingDate is a value of the trending_date column as written ("18.01.11" = yy.dd.mm,
// 2018-11-01; for 2020 files "2020-08-12" or "2020-08-12T00:00:00Z"); "" selects the first date
// in the file. A date not in the file is an error listing the dates that are. region is
// only used in error messages. A malformed CSV or a non-numeric count in any row (of any
// date) is an error naming the line; LoadCSV never panics on bad input.
//
// Field mapping: Id; Snippet{Title, Description, PublishedAt, ChannelId, ChannelTitle,
// CategoryId, Tags, Thumbnails.Default (Url, 120x90), LiveBroadcastContent "none"};
// Statistics{ViewCount, LikeCount, DislikeCount, CommentCount, FavoriteCount 0} where
// LikeCount/DislikeCount are absent when ratings_disabled and CommentCount is absent when
// comments_disabled, as the API omits them; ContentDetails is present but empty (the CSVs
// record no duration). Tags "[none]"/"[None]" mean no tags; the 2017 form `"a"|"b"` is
// unquoted. The 2017 files have literal `\n` escapes in descriptions, turned into newlines,
// and no channel id: ChannelId is then SyntheticChannelID(channel_title), an invention of
// this emulator.
func LoadCSV(r io.Reader, region, trendingDate string) ([]*youtube.Video, error) {
	dates, charts, err := LoadCSVCharts(r, region)
	if err != nil {
		return nil, err
	}
	want := trendingDate
	if want == "" {
		want = dates[0]
	}
	var videos []*youtube.Video
	for _, d := range dates {
		if matchDate(d, want) {
			videos = append(videos, charts[d]...)
		}
	}
	if len(videos) == 0 {
		return nil, fmt.Errorf("cannot load trending CSV%s: trending date %q not in file; dates present: %s",
			forRegion(region), trendingDate, strings.Join(dates, ", "))
	}
	return videos, nil
}

// LoadCSVCharts parses a recorded trending CSV once and returns every trending date in order
// of first appearance together with its chart, mapped as LoadCSV does. It is the one-pass
// equivalent of calling LoadCSV for each date. region is only used in error
// messages.
func LoadCSVCharts(r io.Reader, region string) (dates []string, charts map[string][]*youtube.Video, err error) {
	format, rows, err := readCSV(r)
	if err != nil {
		if region != "" {
			return nil, nil, fmt.Errorf("region %s: %w", region, err)
		}
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("cannot load trending CSV%s: no data rows after the header", forRegion(region))
	}
	charts = map[string][]*youtube.Video{}
	for _, row := range rows {
		v, err := rowVideo(format, row)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot load trending CSV%s: line %d: %w", forRegion(region), row.line, err)
		}
		d := row.fields["trending_date"]
		if charts[d] == nil {
			dates = append(dates, d)
		}
		charts[d] = append(charts[d], v)
	}
	return dates, charts, nil
}

func forRegion(region string) string {
	if region == "" {
		return ""
	}
	return " for region " + region
}

func rowVideo(format csvFormat, row csvRow) (*youtube.Video, error) {
	f := row.fields
	var (
		title, published, channelID, channelTitle, categoryID, viewsCol string
		description                                                     = f["description"]
	)
	switch format {
	case format2018:
		title, published, channelID, channelTitle, categoryID = f["title"], f["publishedAt"], f["channelId"], f["channelTitle"], f["categoryId"]
		viewsCol = "view_count"
	case format2017:
		title, published, channelTitle, categoryID = f["title"], f["publish_time"], f["channel_title"], f["category_id"]
		channelID = SyntheticChannelID(channelTitle)
		viewsCol = "views"
		description = strings.ReplaceAll(description, `\n`, "\n")
	}
	id := f["video_id"]
	if id == "" {
		return nil, errors.New("empty video_id")
	}
	ratingsOff, err := parseBool(f, "ratings_disabled")
	if err != nil {
		return nil, err
	}
	commentsOff, err := parseBool(f, "comments_disabled")
	if err != nil {
		return nil, err
	}
	stats := &youtube.VideoStatistics{ForceSendFields: []string{"ViewCount", "FavoriteCount"}}
	if stats.ViewCount, err = parseCount(f, viewsCol); err != nil {
		return nil, err
	}
	if !ratingsOff {
		if stats.LikeCount, err = parseCount(f, "likes"); err != nil {
			return nil, err
		}
		if stats.DislikeCount, err = parseCount(f, "dislikes"); err != nil {
			return nil, err
		}
		stats.ForceSendFields = append(stats.ForceSendFields, "LikeCount", "DislikeCount")
	}
	if !commentsOff {
		if stats.CommentCount, err = parseCount(f, "comment_count"); err != nil {
			return nil, err
		}
		stats.ForceSendFields = append(stats.ForceSendFields, "CommentCount")
	}
	snippet := &youtube.VideoSnippet{
		Title:                title,
		Description:          description,
		PublishedAt:          published,
		ChannelId:            channelID,
		ChannelTitle:         channelTitle,
		CategoryId:           categoryID,
		Tags:                 parseTags(f["tags"]),
		LiveBroadcastContent: "none",
	}
	if u := f["thumbnail_link"]; u != "" {
		snippet.Thumbnails = &youtube.ThumbnailDetails{Default: &youtube.Thumbnail{Url: u, Width: 120, Height: 90}}
	}
	return &youtube.Video{
		Kind:           "youtube#video",
		Id:             id,
		Snippet:        snippet,
		Statistics:     stats,
		ContentDetails: &youtube.VideoContentDetails{},
	}, nil
}

func parseBool(f map[string]string, col string) (bool, error) {
	switch f[col] {
	case "True", "true", "TRUE":
		return true, nil
	case "False", "false", "FALSE", "":
		return false, nil
	}
	return false, fmt.Errorf("column %s: %q is not True or False", col, f[col])
}

func parseCount(f map[string]string, col string) (uint64, error) {
	s := f[col]
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("column %s: %q is not a non-negative integer", col, s)
	}
	return n, nil
}

// parseTags splits the tags column: "a|b" (2018/2020), `"a"|"b"` (2017); "[none]" and
// "[None]" mean no tags.
func parseTags(s string) []string {
	if s == "" || strings.EqualFold(s, "[none]") {
		return nil
	}
	tags := strings.Split(s, "|")
	for i, t := range tags {
		tags[i] = strings.Trim(t, `"`)
	}
	return tags
}

// SyntheticChannelID returns the channel id the emulator invents for a channel title when the
// data has none (the 2017 Kaggle CSVs): "UC" followed by the first 22 characters of the
// unpadded base64url SHA-256 of the title, so it has the 24-character shape of a real channel
// id and is stable across files and runs. It is not a real YouTube channel id.
func SyntheticChannelID(channelTitle string) string {
	sum := sha256.Sum256([]byte(channelTitle))
	return "UC" + base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

var regionFileNames = []*regexp.Regexp{
	regexp.MustCompile(`^\d\d\.\d\d\.\d\d_([A-Z]{2})_videos\.csv$`), // 18.01.11_US_videos.csv
	regexp.MustCompile(`^([A-Z]{2})videos\.csv$`),                   // USvideos.csv
	regexp.MustCompile(`^([A-Z]{2})_youtube_trending_data\.csv$`),   // US_youtube_trending_data.csv
}

// RegionFromFileName returns the region code encoded in a recorded CSV's base name:
// "18.01.11_US_videos.csv", "USvideos.csv" and "US_youtube_trending_data.csv" all give "US".
// ok is false for any other name.
func RegionFromFileName(name string) (region string, ok bool) {
	base := filepath.Base(name)
	for _, re := range regionFileNames {
		if m := re.FindStringSubmatch(base); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// LoadCSVFile opens a recorded trending CSV, takes its region from the file name (see
// RegionFromFileName) and loads the chart of trendingDate ("" = first date in the file) with
// LoadCSV. Errors name the file.
func LoadCSVFile(path, trendingDate string) (region string, videos []*youtube.Video, err error) {
	region, f, err := openRegionFile(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if videos, err = LoadCSV(f, region, trendingDate); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	return region, videos, nil
}

// openRegionFile opens the recorded trending CSV at path, its region taken from its name.
func openRegionFile(path string) (region string, f *os.File, err error) {
	region, ok := RegionFromFileName(path)
	if !ok {
		return "", nil, fmt.Errorf("cannot load %s: no region in file name; expected yy.dd.mm_XX_videos.csv, XXvideos.csv or XX_youtube_trending_data.csv", path)
	}
	if f, err = os.Open(path); err != nil {
		return "", nil, fmt.Errorf("cannot load trending CSV: %w", err)
	}
	return region, f, nil
}
