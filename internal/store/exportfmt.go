package store

import (
	"bufio"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ExportWriter writes rows of Export in one format; Flush ends the file.
type ExportWriter interface {
	Row(r *ExportRow) error
	Flush() error
}

// ExportFormat selects an ExportWriter.
type ExportFormat struct {
	Format        string // "csv", "jsonl" or "parquet" (ParquetRow)
	Layout        string // csv: LayoutYoutubeNew or LayoutTrendingDaily
	PerCapture    bool   // csv: appends the captured_at and rank columns
	NoDescription bool   // descriptions left out (empty CSV field, no JSON key)
	// RegionColumn (csv) appends a region column: regions can share a file.
	RegionColumn bool
	// SpreadsheetSafe (csv) prefixes ' to a cell starting with =, +, -, @,
	// tab or CR, so a spreadsheet does not run it (OWASP "CSV Injection").
	SpreadsheetSafe bool
}

// CSV layouts of ExportFormat.Layout: LayoutYoutubeNew is the Kaggle "youtube-new" 2017 columns
// (trending_date yy.dd.mm, publish_time with milliseconds, tags "a"|"b" or [none], newlines in
// descriptions as \n); LayoutTrendingDaily the 2018 scraper / 2020 "updated daily" columns (ISO
// trending_date, publishedAt in seconds, tags a|b or [None]).
const (
	LayoutYoutubeNew    = "youtube-new"
	LayoutTrendingDaily = "trending-daily"
)

// The layouts' columns (docs/design.md §6).
var (
	layoutYoutubeNew = []string{"video_id", "trending_date", "title", "channel_title", "category_id", "publish_time",
		"tags", "views", "likes", "dislikes", "comment_count", "thumbnail_link", "comments_disabled",
		"ratings_disabled", "video_error_or_removed", "description"}
	layoutTrendingDaily = []string{"video_id", "title", "publishedAt", "channelId", "channelTitle", "categoryId",
		"trending_date", "tags", "view_count", "likes", "dislikes", "comment_count", "thumbnail_link",
		"comments_disabled", "ratings_disabled", "description"}
)

// NewExportWriter returns a writer of f to w and writes the CSV header. CSV values are written as
// the datasets do (docs/schema.md; hideable); JSON Lines writes an unknown or omitted count as
// null. Errors: an unknown format or layout; the header's write error.
func NewExportWriter(w io.Writer, f ExportFormat) (ExportWriter, error) {
	switch f.Format {
	case "jsonl":
		bw, ok := w.(*bufio.Writer)
		if !ok {
			bw = bufio.NewWriterSize(w, 64<<10)
		}
		return &jsonlWriter{w: bw, noDescription: f.NoDescription}, nil
	case "parquet":
		return newParquetWriter(w, f.NoDescription), nil
	case "csv":
		if f.Layout != LayoutYoutubeNew && f.Layout != LayoutTrendingDaily {
			return nil, fmt.Errorf("unknown export layout %q: want %s or %s", f.Layout, LayoutYoutubeNew, LayoutTrendingDaily)
		}
		c := &csvWriter{w: csv.NewWriter(w), f: f, capture: -1}
		c.day, c.pub = "06.02.01", "2006-01-02T15:04:05.000Z"
		h := slices.Clone(layoutYoutubeNew)
		if c.daily = f.Layout == LayoutTrendingDaily; c.daily {
			h, c.day, c.pub = slices.Clone(layoutTrendingDaily), "2006-01-02T00:00:00Z", "2006-01-02T15:04:05Z"
		}
		if f.PerCapture {
			h = append(h, "captured_at", "rank")
		}
		if f.RegionColumn {
			h = append(h, "region")
		}
		return c, c.w.Write(h)
	}
	return nil, fmt.Errorf("unknown export format %q: want csv, jsonl or parquet", f.Format)
}

// csvWriter writes a dataset layout with encoding/csv.
type csvWriter struct {
	w        *csv.Writer
	daily    bool   // trending-daily, else youtube-new
	day, pub string // the time layouts of trending_date and the publish time
	f        ExportFormat
	rec      []string
	// the capture's strings, recomputed when it changes
	capture                  int64
	trendingDate, capturedAt string
}

func (c *csvWriter) Row(r *ExportRow) error {
	if r.CaptureID != c.capture {
		c.capture, c.trendingDate = r.CaptureID, r.CapturedAt.UTC().Format(c.day)
		c.capturedAt = r.CapturedAt.UTC().Format(time.RFC3339Nano)
	}
	desc := r.Description
	if c.f.NoDescription {
		desc = ""
	}
	pub := ""
	if !r.PublishedAt.IsZero() {
		pub = r.PublishedAt.UTC().Format(c.pub)
	}
	likes, ratingsOff := hideable(r.Views, r.Likes)
	comments, commentsOff := hideable(r.Views, r.Comments)
	c.rec = c.rec[:0]
	if c.daily {
		c.rec = append(c.rec, r.VideoID, r.Title, pub, r.ChannelID, r.ChannelTitle, r.CategoryID, c.trendingDate,
			csvTags(r.Tags, false), count(r.Views), likes, "0", comments, r.ThumbnailURL,
			commentsOff, ratingsOff, desc)
	} else {
		if strings.Contains(desc, "\n") {
			desc = strings.ReplaceAll(desc, "\n", `\n`) // the 2017 files escape newlines
		}
		c.rec = append(c.rec, r.VideoID, c.trendingDate, r.Title, r.ChannelTitle, r.CategoryID, pub,
			csvTags(r.Tags, true), count(r.Views), likes, "0", comments, r.ThumbnailURL,
			commentsOff, ratingsOff, "False", desc)
	}
	if c.f.PerCapture {
		c.rec = append(c.rec, c.capturedAt, strconv.Itoa(r.Rank))
	}
	if c.f.RegionColumn {
		c.rec = append(c.rec, r.Region)
	}
	if c.f.SpreadsheetSafe {
		for i, v := range c.rec {
			if v != "" && strings.IndexByte("=+-@\t\r", v[0]) >= 0 {
				c.rec[i] = "'" + v
			}
		}
	}
	return c.w.Write(c.rec)
}

// csvTags renders stored tags as the layout does: `"a"|"b"` or [none]
// (2017, quoted), a|b or [None] (2018/2020).
func csvTags(joined string, quoted bool) string {
	none, q := "[None]", ""
	if quoted {
		none, q = "[none]", `"`
	}
	if joined == "" {
		return none
	}
	return q + strings.Join(splitTags(joined), q+"|"+q) + q
}

func (c *csvWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// hideable writes a count its owner may hide (likes: ratings_disabled;
// comments: comments_disabled) as the datasets do: "0" and "True" when the
// views are known but not n; else n ("" when unknown) and "False".
func hideable(views, n sql.NullInt64) (value, disabled string) {
	if views.Valid && !n.Valid {
		return "0", "True"
	}
	return count(n), "False"
}

// count writes a statistic: "" when unknown.
func count(n sql.NullInt64) string {
	if !n.Valid {
		return ""
	}
	return strconv.FormatInt(n.Int64, 10)
}

// jsonlWriter writes one JSON object a line by hand (encoding/json's
// reflection cost more than the rest of the export).
type jsonlWriter struct {
	w             *bufio.Writer
	noDescription bool
	buf           []byte
	capture       int64
	head          []byte                // the capture's fields, reused for its rows
	videos        map[int64]*jsonlVideo // by VideoKey, at most ExportVideoCache
}

// jsonlVideo is one video's rendered members: "video_id" to "thumbnail_url", and "description".
type jsonlVideo struct{ text, description []byte }

func (j *jsonlWriter) Row(r *ExportRow) error {
	if r.CaptureID != j.capture || j.head == nil {
		j.capture = r.CaptureID
		h := appendJSONString(append(j.head[:0], `{"region":`...), r.Region)
		h = r.CapturedAt.UTC().AppendFormat(append(h, `,"captured_at":"`...), time.RFC3339Nano)
		h = strconv.AppendBool(append(h, `","complete":`...), r.Complete)
		h = strconv.AppendInt(append(h, `,"run_id":`...), r.RunID, 10)
		change := ""
		if c := ChangeInEffect(r.CapturedAt); c != nil {
			change = c.Date
		}
		j.head = appendStringOrNull(append(h, `,"youtube_change":`...), change)
	}
	v := j.videos[r.VideoKey]
	if v == nil || r.VideoKey == 0 {
		v = j.renderVideo(r)
	}
	b := strconv.AppendInt(append(append(j.buf[:0], j.head...), `,"rank":`...), int64(r.Rank), 10)
	b = append(b, v.text...)
	b = appendCount(append(b, `,"view_count":`...), r.Views)
	b = appendCount(append(b, `,"like_count":`...), r.Likes)
	b = appendCount(append(b, `,"comment_count":`...), r.Comments)
	b = append(append(b, v.description...), "}\n"...)
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

// renderVideo renders r's video fields, cached under r.VideoKey (but 0).
func (j *jsonlWriter) renderVideo(r *ExportRow) *jsonlVideo {
	b := appendJSONString([]byte(`,"video_id":`), r.VideoID)
	b = appendJSONString(append(b, `,"title":`...), r.Title)
	b = appendJSONString(append(b, `,"channel_id":`...), r.ChannelID)
	b = appendJSONString(append(b, `,"channel_title":`...), r.ChannelTitle)
	b = appendJSONString(append(b, `,"category_id":`...), r.CategoryID)
	b = append(b, `,"tags":[`...)
	for i, t := range splitTags(r.Tags) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, t)
	}
	pub := ""
	if !r.PublishedAt.IsZero() {
		pub = r.PublishedAt.UTC().Format(time.RFC3339)
	}
	b = appendStringOrNull(append(b, `],"published_at":`...), pub)
	b = appendStringOrNull(append(b, `,"duration":`...), r.Duration)
	b = appendJSONString(append(b, `,"thumbnail_url":`...), r.ThumbnailURL)
	v := &jsonlVideo{text: b}
	if !j.noDescription {
		v.description = appendJSONString(append([]byte(nil), `,"description":`...), r.Description)
	}
	if r.VideoKey != 0 {
		if j.videos == nil || len(j.videos) >= ExportVideoCache {
			j.videos = make(map[int64]*jsonlVideo, ExportVideoCache)
		}
		j.videos[r.VideoKey] = v
	}
	return v
}

func (j *jsonlWriter) Flush() error { return j.w.Flush() }

// appendStringOrNull appends s as a JSON string, null when "".
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJSONString(b, s)
}

func appendCount(b []byte, n sql.NullInt64) []byte {
	if !n.Valid {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, n.Int64, 10)
}

// appendJSONString appends s as a JSON string (RFC 8259): quotes, backslash and control characters
// escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i, r := range s {
		if r >= 0x20 && r != '"' && r != '\\' && r != '\u2028' && r != '\u2029' && r != utf8.RuneError {
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b = append(b, s[start:i]...)
		start = i + size
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == utf8.RuneError:
			b = append(b, s[i:start]...) // U+FFFD itself
		default:
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
