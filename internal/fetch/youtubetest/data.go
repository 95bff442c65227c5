package youtubetest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/youtube/v3"
)

// The recorded trending CSV layouts (docs/design.md §7): the 2018 scraper's (api_snapshot,
// and the 2020 files with ISO trending dates) and the Kaggle "youtube-new" 2017 one.
var (
	header2018 = []string{"video_id", "title", "publishedAt", "channelId", "channelTitle", "categoryId",
		"trending_date", "tags", "view_count", "likes", "dislikes", "comment_count", "thumbnail_link",
		"comments_disabled", "ratings_disabled", "description"}
	header2017 = []string{"video_id", "trending_date", "title", "channel_title", "category_id",
		"publish_time", "tags", "views", "likes", "dislikes", "comment_count", "thumbnail_link",
		"comments_disabled", "ratings_disabled", "video_error_or_removed", "description"}
	// alias2017 names the 2017 columns as the 2018 layout does.
	alias2017 = map[string]string{"channel_title": "channelTitle", "category_id": "categoryId",
		"publish_time": "publishedAt", "views": "view_count"}
	// exportExtra are the columns `trendfetch export --every capture` appends to either
	// layout; they are read past (row order is rank order).
	exportExtra = []string{"captured_at", "rank"}
)

// LoadCSVCharts parses a recorded trending CSV once, its layout detected from the header, and
// returns every trending date as written ("18.01.11" = yy.dd.mm, "2020-08-12" or
// "2020-08-12T00:00:00Z"), in order of first appearance, with its chart in file (rank) order
// (docs/design.md §7 maps a row). A malformed CSV or a bad count in any row is an error naming
// the line (and region). It never panics on bad input.
func LoadCSVCharts(r io.Reader, region string) (dates []string, charts map[string][]*youtube.Video, err error) {
	defer func() {
		if err != nil && region != "" {
			err = fmt.Errorf("cannot read trending CSV for region %s: %w", region, err)
		} else if err != nil {
			err = fmt.Errorf("cannot read trending CSV: %w", err)
		}
	}()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	header, err := csv.NewReader(bytes.NewReader(data)).Read()
	if err == io.EOF {
		return nil, nil, errors.New("empty input, expected a header line")
	} else if err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	base := header
	if n := len(header) - len(exportExtra); n > 0 && slices.Equal(header[n:], exportExtra) {
		base = header[:n]
	}
	is2017 := slices.Equal(base, header2017)
	switch {
	case !is2017 && !slices.Equal(base, header2018):
		return nil, nil, fmt.Errorf("line 1: unknown header %q; expected the 2018 scraper columns (%s) or the 2017 Kaggle columns (%s)",
			strings.Join(header, ","), strings.Join(header2018, ","), strings.Join(header2017, ","))
	case !is2017:
		data = keepQuotedCRLF(data)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	// The 2017 files write tags as "a"|"b" without quoting the field, which RFC 4180 forbids;
	// LazyQuotes reads them as Python's csv module (which wrote them) does. The 2018 and 2020
	// files quote every field and are read strictly.
	cr.LazyQuotes = is2017
	if _, err := cr.Read(); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	dates, charts, err = readCSVRows(cr, header, is2017)
	if err != nil {
		return nil, nil, err
	}
	if len(dates) == 0 {
		return nil, nil, errors.New("no data rows after the header")
	}
	return dates, charts, nil
}

// readCSVRows reads the data rows of cr, its columns named by header: the trending dates in
// order of first appearance and each date's chart.
func readCSVRows(cr *csv.Reader, header []string, is2017 bool) (dates []string, charts map[string][]*youtube.Video, err error) {
	charts = map[string][]*youtube.Video{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		} else if err != nil { // *csv.ParseError carries "record on line N"
			return nil, nil, err
		}
		line, _ := cr.FieldPos(0)
		f := make(map[string]string, len(header))
		for i, h := range header {
			f[cmp.Or(alias2017[h], h)] = rec[i]
		}
		v, err := rowVideo(is2017, f)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		d := f["trending_date"]
		if charts[d] == nil {
			dates = append(dates, d)
		}
		charts[d] = append(charts[d], v)
	}
	return dates, charts, nil
}

// keepQuotedCRLF returns data with every CRLF inside a quoted field written CR CR LF, so
// that encoding/csv, which turns a line's closing CRLF into LF (also inside a quoted field),
// gives back the CRLF the 2020 files keep in descriptions. Only for files that quote
// strictly (the 2018 layout): quote parity tells inside from outside.
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

// rowVideo maps a row (by 2018 column names) onto a youtube#video (docs/design.md §7).
func rowVideo(is2017 bool, f map[string]string) (*youtube.Video, error) {
	if f["video_id"] == "" {
		return nil, errors.New("empty video_id")
	}
	channelID, description := f["channelId"], f["description"]
	if is2017 {
		channelID, description = SyntheticChannelID(f["channelTitle"]), strings.ReplaceAll(description, `\n`, "\n")
	}
	for _, col := range []string{"ratings_disabled", "comments_disabled"} {
		if _, ok := bools[f[col]]; !ok {
			return nil, fmt.Errorf("column %s: %q is not True or False", col, f[col])
		}
	}
	// The API omits likeCount and dislikeCount when ratings are disabled, commentCount when
	// comments are; favoriteCount is always 0.
	stats := &youtube.VideoStatistics{ForceSendFields: []string{"FavoriteCount"}}
	for _, c := range []struct {
		col, field string
		dst        *uint64
		offWhen    string // the column disabling it
	}{{"view_count", "ViewCount", &stats.ViewCount, ""}, {"likes", "LikeCount", &stats.LikeCount, "ratings_disabled"},
		{"dislikes", "DislikeCount", &stats.DislikeCount, "ratings_disabled"},
		{"comment_count", "CommentCount", &stats.CommentCount, "comments_disabled"}} {
		if c.offWhen != "" && bools[f[c.offWhen]] {
			continue
		}
		if s := f[c.col]; s != "" {
			var err error
			if *c.dst, err = strconv.ParseUint(s, 10, 64); err != nil {
				return nil, fmt.Errorf("column %s: %q is not a non-negative integer", c.col, s)
			}
		}
		stats.ForceSendFields = append(stats.ForceSendFields, c.field)
	}
	var tags []string // "a|b", `"a"|"b"` (2017); "[none]" and "[None]" are none
	if t := f["tags"]; t != "" && !strings.EqualFold(t, "[none]") {
		for tag := range strings.SplitSeq(t, "|") {
			tags = append(tags, strings.Trim(tag, `"`))
		}
	}
	v := &youtube.Video{Kind: "youtube#video", Id: f["video_id"], Statistics: stats, ContentDetails: &youtube.VideoContentDetails{},
		Snippet: &youtube.VideoSnippet{Title: f["title"], Description: description, PublishedAt: f["publishedAt"], ChannelId: channelID,
			ChannelTitle: f["channelTitle"], CategoryId: f["categoryId"], Tags: tags, LiveBroadcastContent: "none"}}
	if u := f["thumbnail_link"]; u != "" {
		v.Snippet.Thumbnails = &youtube.ThumbnailDetails{Default: &youtube.Thumbnail{Url: u, Width: 120, Height: 90}}
	}
	return v, nil
}

// bools are the values of the *_disabled columns.
var bools = map[string]bool{"True": true, "true": true, "TRUE": true, "False": false, "false": false, "FALSE": false, "": false}

// SyntheticChannelID returns the channel id, not a real one, invented for a channel title when the
// data has none (2017 CSVs): "UC" and 22 characters of the unpadded base64url SHA-256 of the title.
func SyntheticChannelID(channelTitle string) string {
	sum := sha256.Sum256([]byte(channelTitle))
	return "UC" + base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

var regionFileNames = regexp.MustCompile(`^(?:\d\d\.\d\d\.\d\d_([A-Z]{2})_videos|([A-Z]{2})videos|([A-Z]{2})_youtube_trending_data)\.csv$`)

// RegionFromFileName returns the region code encoded in a recorded CSV's base name:
// "18.01.11_US_videos.csv", "USvideos.csv" and "US_youtube_trending_data.csv" all give "US".
// ok is false for any other name.
func RegionFromFileName(name string) (region string, ok bool) {
	m := regionFileNames.FindStringSubmatch(filepath.Base(name))
	if m == nil {
		return "", false
	}
	return m[1] + m[2] + m[3], true
}

// LoadCSVFile loads the chart of the first trending date of the recorded trending CSV at path
// (LoadCSVCharts), the region from the file name (RegionFromFileName). Errors name the file.
func LoadCSVFile(path string) (region string, videos []*youtube.Video, err error) {
	region, f, err := openCSV(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	dates, charts, err := LoadCSVCharts(f, region)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	return region, charts[dates[0]], nil
}

// openCSV opens the recorded trending CSV at path, its region taken from its name.
func openCSV(path string) (region string, f *os.File, err error) {
	region, ok := RegionFromFileName(path)
	if !ok {
		return "", nil, fmt.Errorf("cannot load %s: no region in file name; expected yy.dd.mm_XX_videos.csv, XXvideos.csv or XX_youtube_trending_data.csv", path)
	}
	if f, err = os.Open(path); err != nil {
		return "", nil, fmt.Errorf("cannot load trending CSV: %w", err)
	}
	return region, f, nil
}

// SampleSize is the number of videos in Sample: 60, so a client paging with maxResults=50
// sees two pages.
const SampleSize = 60

// sampleCategories are real YouTube category ids and titles (public, stable).
var sampleCategories = []struct{ id, title string }{
	{"1", "Film & Animation"}, {"2", "Autos & Vehicles"}, {"10", "Music"}, {"15", "Pets & Animals"},
	{"17", "Sports"}, {"20", "Gaming"}, {"22", "People & Blogs"}, {"23", "Comedy"},
	{"24", "Entertainment"}, {"25", "News & Politics"}, {"26", "Howto & Style"},
	{"27", "Education"}, {"28", "Science & Technology"},
}

// Sample returns a built-in synthetic chart of SampleSize fresh videos in rank order, for
// demos and tests without the recorded data. Everything is invented and says so: ids
// "sample-0001" ... "sample-0060" (11 characters, like real ids), titles "Sample video N
// (synthetic)", 12 channels "Sample Channel N" (SyntheticChannelID), real category ids in
// turn, descending counts (every 10th video without ratings, every 7th without comments,
// every 5th without tags), durations, and published times in January 2026.
func Sample() []*youtube.Video {
	base := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	videos := make([]*youtube.Video, 0, SampleSize)
	for i := 1; i <= SampleSize; i++ {
		id, ch, cat := fmt.Sprintf("sample-%04d", i), fmt.Sprintf("Sample Channel %d", (i-1)%12+1), sampleCategories[(i-1)%len(sampleCategories)]
		stats := &youtube.VideoStatistics{ViewCount: uint64(5_000_000 / i), ForceSendFields: []string{"ViewCount", "FavoriteCount"}}
		if i%10 != 0 {
			stats.LikeCount = uint64(200_000 / i)
			stats.ForceSendFields = append(stats.ForceSendFields, "LikeCount")
		}
		if i%7 != 0 {
			stats.CommentCount = uint64(20_000 / i)
			stats.ForceSendFields = append(stats.ForceSendFields, "CommentCount")
		}
		var tags []string
		if i%5 != 0 {
			tags = []string{"sample", "synthetic", cat.title}
		}
		videos = append(videos, &youtube.Video{Kind: "youtube#video", Id: id, Statistics: stats,
			Snippet: &youtube.VideoSnippet{
				Title:       fmt.Sprintf("Sample video %d (synthetic)", i),
				Description: fmt.Sprintf("Synthetic sample video %d of the trendfetch YouTube emulator.\nCategory: %s. Not real data.", i, cat.title),
				PublishedAt: base.Add(-time.Duration(i) * 7 * time.Hour).Format(time.RFC3339),
				ChannelId:   SyntheticChannelID(ch), ChannelTitle: ch, CategoryId: cat.id, Tags: tags, LiveBroadcastContent: "none",
				Thumbnails: &youtube.ThumbnailDetails{
					Default: &youtube.Thumbnail{Url: "https://i.ytimg.com/vi/" + id + "/default.jpg", Width: 120, Height: 90}},
			},
			ContentDetails: &youtube.VideoContentDetails{Duration: fmt.Sprintf("PT%dM%dS", 1+i%14, (i*17)%60), Dimension: "2d", Definition: "hd", Caption: "false"},
		})
	}
	return videos
}

// SampleCategories returns a youtube#videoCategoryListResponse of the categories Sample uses,
// for SetCategories: YouTube's real ids and titles, etags computed by the emulator.
func SampleCategories() []byte {
	resp := youtube.VideoCategoryListResponse{Kind: "youtube#videoCategoryListResponse"}
	for _, c := range sampleCategories {
		item := &youtube.VideoCategory{Kind: "youtube#videoCategory", Id: c.id, Snippet: &youtube.VideoCategorySnippet{
			Title: c.title, Assignable: true, ChannelId: "UCBR8-60-B28hp2BmDPdntcQ", ForceSendFields: []string{"Assignable"}}}
		b, _ := json.Marshal(item)
		item.Etag = etagOf(b)
		resp.Items = append(resp.Items, item)
	}
	b, _ := json.Marshal(&resp) // the envelope's etag is the one the emulator serves (writeList)
	return b
}
