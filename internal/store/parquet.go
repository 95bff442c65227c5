package store

import (
	"io"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ParquetRow is one row of `export --format parquet`: the JSON Lines
// fields, typed. Counts are int64, null when the API omitted them or they
// are unknown; times are UTC timestamps (microseconds); tags a list of
// strings. Text columns are dictionary-encoded (a video's text repeats on
// every chart it is on) and every column is zstd-compressed.
type ParquetRow struct {
	Region       string     `parquet:"region,dict"`
	CapturedAt   time.Time  `parquet:"captured_at,timestamp(microsecond:utc)"`
	Complete     bool       `parquet:"complete"`
	RunID        int64      `parquet:"run_id"`
	Rank         int64      `parquet:"rank"`
	VideoID      string     `parquet:"video_id,dict"`
	Title        string     `parquet:"title,dict"`
	ChannelID    string     `parquet:"channel_id,dict"`
	ChannelTitle string     `parquet:"channel_title,dict"`
	CategoryID   string     `parquet:"category_id,dict"`
	Tags         []string   `parquet:"tags,list"`
	PublishedAt  *time.Time `parquet:"published_at,optional,timestamp(microsecond:utc)"`
	Duration     *string    `parquet:"duration,optional,dict"`
	ThumbnailURL string     `parquet:"thumbnail_url,dict"`
	ViewCount    *int64     `parquet:"view_count,optional"`
	LikeCount    *int64     `parquet:"like_count,optional"`
	CommentCount *int64     `parquet:"comment_count,optional"`
	// Description is null with --no-description.
	Description *string `parquet:"description,optional,dict"`
}

// ParquetRowGroup is the rows per row group: a row group is buffered in
// memory (pages plus dictionaries) until it is flushed, so this bounds the
// writer's memory whatever the export's size. BenchmarkHistoryExport
// measures the whole process: ~40 MB of live Go heap and 130-155 MB peak
// RSS at 1.4 KB of text a row without ParquetMemoryLimit (10,000 rows per
// group: the same peak, a file 32% larger).
const ParquetRowGroup = 20_000

// ParquetMemoryLimit is the Go soft memory limit (runtime/debug
// SetMemoryLimit) `export --format parquet` runs under, in bytes. Measured
// on the 1M-entry fixture (/usr/bin/time -v of `export --every capture
// --format parquet`, 2 shared cores): peak RSS 137 MB with Go's default
// pacing (heap goal twice the ~40 MB live heap), 100 MB at 56 MiB, 88 MB at
// 48 MiB, in about the time of the CSV export (5.4-6.4 s against 6.2 s);
// ~40 MB of the RSS is outside the Go heap (SQLite's cache, the runtime).
const ParquetMemoryLimit = 48 << 20

// parquetBatch is the rows handed to the writer at a time.
const parquetBatch = 512

// parquetWriter writes ParquetRows (ExportWriter).
type parquetWriter struct {
	w             *parquet.GenericWriter[ParquetRow]
	noDescription bool
	batch         []ParquetRow
	// texts holds each video text's rendered fields by ExportRow.VideoKey
	// (at most ExportVideoCache; emptied when full).
	texts map[int64]*parquetText
}

// parquetText is the part of a row that depends on the video text only.
type parquetText struct {
	tags        []string
	published   *time.Time
	duration    *string
	description *string
}

func newParquetWriter(w io.Writer, noDescription bool) *parquetWriter {
	return &parquetWriter{
		w: parquet.NewGenericWriter[ParquetRow](w,
			parquet.Compression(newZstdCodec()),
			parquet.MaxRowsPerRowGroup(ParquetRowGroup),
			parquet.CreatedBy("trendfetch", "", "")),
		noDescription: noDescription,
		batch:         make([]ParquetRow, 0, parquetBatch),
		texts:         make(map[int64]*parquetText, ExportVideoCache),
	}
}

func (p *parquetWriter) Row(r *ExportRow) error {
	t := p.texts[r.VideoKey]
	if t == nil || r.VideoKey == 0 {
		t = &parquetText{}
		if r.Tags != "" {
			t.tags = strings.Split(r.Tags, "\n")
		}
		if !r.PublishedAt.IsZero() {
			u := r.PublishedAt.UTC()
			t.published = &u
		}
		if r.Duration != "" {
			d := r.Duration
			t.duration = &d
		}
		if !p.noDescription {
			d := r.Description
			t.description = &d
		}
		if len(p.texts) >= ExportVideoCache {
			clear(p.texts)
		}
		p.texts[r.VideoKey] = t
	}
	p.batch = append(p.batch, ParquetRow{
		Region: r.Region, CapturedAt: r.CapturedAt.UTC(), Complete: r.Complete, RunID: r.RunID, Rank: int64(r.Rank),
		VideoID: r.VideoID, Title: r.Title, ChannelID: r.ChannelID, ChannelTitle: r.ChannelTitle, CategoryID: r.CategoryID,
		Tags: t.tags, PublishedAt: t.published, Duration: t.duration, ThumbnailURL: r.ThumbnailURL,
		ViewCount: nullPtr(r.Views.Int64, r.Views.Valid), LikeCount: nullPtr(r.Likes.Int64, r.Likes.Valid),
		CommentCount: nullPtr(r.Comments.Int64, r.Comments.Valid), Description: t.description,
	})
	if len(p.batch) == cap(p.batch) {
		return p.write()
	}
	return nil
}

func (p *parquetWriter) write() error {
	_, err := p.w.Write(p.batch)
	clear(p.batch) // drop references to texts the cache may let go
	p.batch = p.batch[:0]
	return err
}

// Flush writes the last rows and the file footer: the writer is done.
func (p *parquetWriter) Flush() error {
	if err := p.write(); err != nil {
		return err
	}
	return p.w.Close()
}

func nullPtr(n int64, valid bool) *int64 {
	if !valid {
		return nil
	}
	return &n
}

// zstdCodec is parquet's ZSTD codec with a 512 KB window: parquet-go's own
// (compress/zstd) keeps zstd's default 8 MB window, whose history buffers
// took 32 MB of a 70 MB export heap, while a page is at most a few
// hundred KB, so a larger window finds nothing more.
type zstdCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newZstdCodec() *zstdCodec {
	// Errors only for invalid options, which these are not.
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(512<<10),
		zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	return &zstdCodec{enc: enc, dec: dec}
}

func (*zstdCodec) String() string                            { return "ZSTD" }
func (*zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

// Encode and Decode are safe for concurrent use (EncodeAll, DecodeAll).
func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	return c.enc.EncodeAll(src, dst[:0]), nil
}
func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) { return c.dec.DecodeAll(src, dst[:0]) }
