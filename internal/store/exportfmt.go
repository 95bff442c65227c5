package store

import (
	"bufio"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ExportWriter writes rows of Export in one format. Header is written by
// NewExportWriter; call Flush at the end.
type ExportWriter interface {
	Row(r *ExportRow) error
	Flush() error
}

// ExportFormat selects an ExportWriter.
type ExportFormat struct {
	// Format is "csv", "jsonl" or "parquet" (ParquetRow).
	Format string
	// Layout (csv) is LayoutYoutubeNew or LayoutTrendingDaily.
	Layout string
	// PerCapture (csv) appends the captured_at and rank columns.
	PerCapture bool
	// NoDescription leaves descriptions out (empty CSV field, no JSON key).
	NoDescription bool
	// RegionColumn (csv) appends a region column, so that several regions
	// can share one file (the public datasets have one file per region).
	RegionColumn bool
	// SpreadsheetSafe (csv) prefixes every cell that starts with =, +, -,
	// @, tab or carriage return with ' so that a spreadsheet does not run
	// it as a formula (OWASP "CSV Injection"). Off by default: the public
	// datasets write such cells as they are.
	SpreadsheetSafe bool
}

// CSV layouts of ExportFormat.Layout.
const (
	// LayoutYoutubeNew is the Kaggle "youtube-new" 2017 columns:
	// trending_date yy.dd.mm, publish_time 2017-11-13T17:13:01.000Z, tags
	// "a"|"b" or [none], newlines in descriptions written as \n.
	LayoutYoutubeNew = "youtube-new"
	// LayoutTrendingDaily is the 2018 scraper / 2020 "updated daily"
	// columns: ISO trending_date (2020-08-12T00:00:00Z), publishedAt
	// 2020-08-11T19:20:14Z, tags a|b or [None].
	LayoutTrendingDaily = "trending-daily"
)

// Export layouts: the columns of the public trending datasets
// (docs/design.md §7).
var (
	layoutYoutubeNew = []string{"video_id", "trending_date", "title", "channel_title", "category_id", "publish_time",
		"tags", "views", "likes", "dislikes", "comment_count", "thumbnail_link", "comments_disabled",
		"ratings_disabled", "video_error_or_removed", "description"}
	layoutTrendingDaily = []string{"video_id", "title", "publishedAt", "channelId", "channelTitle", "categoryId",
		"trending_date", "tags", "view_count", "likes", "dislikes", "comment_count", "thumbnail_link",
		"comments_disabled", "ratings_disabled", "description"}
)

// NewExportWriter returns a writer of f to w and writes the CSV header.
// Values are written as the datasets do: dislikes (gone from the API) 0,
// video_error_or_removed False; a like or comment count the API omitted
// (hidden by the owner) 0 with ratings_disabled / comments_disabled True
// (see hideable); a statistic of a capture stored without statistics an
// empty CSV field. JSON Lines writes every unknown or omitted count as null.
// Errors: an unknown format or layout; the header's write error.
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
		c := &csvWriter{w: csv.NewWriter(w), daily: f.Layout == LayoutTrendingDaily, f: f, capture: -1}
		return c, c.Header()
	}
	return nil, fmt.Errorf("unknown export format %q: want csv, jsonl or parquet", f.Format)
}

// csvWriter writes a dataset layout with encoding/csv.
type csvWriter struct {
	w     *csv.Writer
	daily bool // trending-daily, else youtube-new
	f     ExportFormat
	rec   []string
	// per-capture strings, recomputed when the capture changes
	capture      int64
	trendingDate string
	capturedAt   string
	tagsB        strings.Builder
}

func (c *csvWriter) Header() error {
	h := layoutYoutubeNew
	if c.daily {
		h = layoutTrendingDaily
	}
	h = append([]string(nil), h...)
	if c.f.PerCapture {
		h = append(h, "captured_at", "rank")
	}
	if c.f.RegionColumn {
		h = append(h, "region")
	}
	return c.w.Write(h)
}

func (c *csvWriter) Row(r *ExportRow) error {
	if r.CaptureID != c.capture {
		c.capture = r.CaptureID
		day := r.CapturedAt.UTC()
		if c.daily {
			c.trendingDate = day.Format("2006-01-02") + "T00:00:00Z"
		} else {
			c.trendingDate = day.Format("06.02.01")
		}
		c.capturedAt = day.Format(time.RFC3339Nano)
	}
	desc := r.Description
	if c.f.NoDescription {
		desc = ""
	}
	pub := ""
	if !r.PublishedAt.IsZero() {
		if c.daily {
			pub = r.PublishedAt.UTC().Format("2006-01-02T15:04:05Z")
		} else {
			pub = r.PublishedAt.UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	likes, ratingsOff := hideable(r.Views, r.Likes)
	comments, commentsOff := hideable(r.Views, r.Comments)
	c.rec = c.rec[:0]
	if c.daily {
		c.rec = append(c.rec, r.VideoID, r.Title, pub, r.ChannelID, r.ChannelTitle, r.CategoryID, c.trendingDate,
			c.tags(r.Tags, false), count(r.Views), likes, "0", comments, r.ThumbnailURL,
			commentsOff, ratingsOff, desc)
	} else {
		if strings.Contains(desc, "\n") {
			desc = strings.ReplaceAll(desc, "\n", `\n`) // the 2017 files escape newlines
		}
		c.rec = append(c.rec, r.VideoID, c.trendingDate, r.Title, r.ChannelTitle, r.CategoryID, pub,
			c.tags(r.Tags, true), count(r.Views), likes, "0", comments, r.ThumbnailURL,
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

// tags renders stored tags ('\n'-joined) as the layout does: `"a"|"b"` or
// [none] (2017), a|b or [None] (2018/2020).
func (c *csvWriter) tags(joined string, quoted bool) string {
	if joined == "" {
		if quoted {
			return "[none]"
		}
		return "[None]"
	}
	sep := "|"
	c.tagsB.Reset()
	if quoted {
		sep = `"|"`
		c.tagsB.WriteByte('"')
	}
	for i, t := range strings.Split(joined, "\n") {
		if i > 0 {
			c.tagsB.WriteString(sep)
		}
		c.tagsB.WriteString(unescapeTag(t))
	}
	if quoted {
		c.tagsB.WriteByte('"')
	}
	return c.tagsB.String()
}

func (c *csvWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// hideable writes a count the API omits when its owner hides it (likes:
// ratings disabled; comments: comments disabled) as the datasets do: when
// the capture's statistics are known (views) but the count is not, "0"
// and the flag "True". When views are unknown too (a chart stored before
// statistics were kept), the count is "" and the flag "False".
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

// jsonlWriter writes one JSON object a line, by hand: encoding/json's
// reflection would cost more than the rest of the export.
type jsonlWriter struct {
	w             *bufio.Writer
	noDescription bool
	buf           []byte
	capture       int64
	head          []byte // the capture's fields, reused for its rows
	// videos holds each video's rendered text by ExportRow.VideoKey (at
	// most ExportVideoCache; emptied when full).
	videos map[int64]*jsonlVideo
}

// jsonlVideo is one video's rendered fields: text from "video_id" to
// "thumbnail_url", description the "description" member ("" without).
type jsonlVideo struct{ text, description []byte }

func (j *jsonlWriter) Header() error { return nil }

func (j *jsonlWriter) Row(r *ExportRow) error {
	if r.CaptureID != j.capture || j.head == nil {
		j.capture = r.CaptureID
		h := j.head[:0]
		h = append(h, `{"region":`...)
		h = appendJSONString(h, r.Region)
		h = append(h, `,"captured_at":"`...)
		h = r.CapturedAt.UTC().AppendFormat(h, time.RFC3339Nano)
		h = append(h, `","complete":`...)
		h = strconv.AppendBool(h, r.Complete)
		h = append(h, `,"run_id":`...)
		h = strconv.AppendInt(h, r.RunID, 10)
		h = append(h, `,"youtube_change":`...)
		if c := ChangeInEffect(r.CapturedAt); c != nil {
			h = appendJSONString(h, c.Date)
		} else {
			h = append(h, "null"...)
		}
		j.head = h
	}
	v := j.videos[r.VideoKey]
	if v == nil || r.VideoKey == 0 {
		v = j.renderVideo(r)
	}
	b := append(j.buf[:0], j.head...)
	b = append(b, `,"rank":`...)
	b = strconv.AppendInt(b, int64(r.Rank), 10)
	b = append(b, v.text...)
	b = appendCount(append(b, `,"view_count":`...), r.Views)
	b = appendCount(append(b, `,"like_count":`...), r.Likes)
	b = appendCount(append(b, `,"comment_count":`...), r.Comments)
	b = append(b, v.description...)
	b = append(b, "}\n"...)
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

// renderVideo renders the video fields of r and caches them under
// r.VideoKey (0: not cached).
func (j *jsonlWriter) renderVideo(r *ExportRow) *jsonlVideo {
	var b []byte
	b = append(b, `,"video_id":`...)
	b = appendJSONString(b, r.VideoID)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, r.Title)
	b = append(b, `,"channel_id":`...)
	b = appendJSONString(b, r.ChannelID)
	b = append(b, `,"channel_title":`...)
	b = appendJSONString(b, r.ChannelTitle)
	b = append(b, `,"category_id":`...)
	b = appendJSONString(b, r.CategoryID)
	b = append(b, `,"tags":[`...)
	if r.Tags != "" {
		rest := r.Tags
		for i := 0; ; i++ {
			t, after, more := strings.Cut(rest, "\n")
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, unescapeTag(t))
			if !more {
				break
			}
			rest = after
		}
	}
	b = append(b, `],"published_at":`...)
	if r.PublishedAt.IsZero() {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = r.PublishedAt.UTC().AppendFormat(b, time.RFC3339)
		b = append(b, '"')
	}
	b = append(b, `,"duration":`...)
	if r.Duration == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, r.Duration)
	}
	b = append(b, `,"thumbnail_url":`...)
	b = appendJSONString(b, r.ThumbnailURL)
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

func appendCount(b []byte, n sql.NullInt64) []byte {
	if !n.Valid {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, n.Int64, 10)
}

// appendJSONString appends s as a JSON string (RFC 8259): quotes,
// backslash and control characters escaped, invalid UTF-8 replaced by
// U+FFFD, U+2028 and U+2029 escaped as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
