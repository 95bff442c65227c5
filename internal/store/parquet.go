package store

import (
	"database/sql"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ParquetRow is one row of `export --format parquet`: the JSON Lines fields typed (docs/schema.md);
// the file's ParquetChangesKey metadata lists the changes its rows cross. Text columns are
// dictionary-encoded (a video's text repeats on every chart it is on), all zstd-compressed.
type ParquetRow struct {
	Region     string    `parquet:"region,dict"`
	CapturedAt time.Time `parquet:"captured_at,timestamp(microsecond:utc)"`
	Complete   bool      `parquet:"complete"`
	RunID      int64     `parquet:"run_id"`
	// YouTubeChange is the Date of the Change in effect at CapturedAt (nil before the first).
	YouTubeChange *string    `parquet:"youtube_change,optional,dict"`
	Rank          int64      `parquet:"rank"`
	VideoID       string     `parquet:"video_id,dict"`
	Title         string     `parquet:"title,dict"`
	ChannelID     string     `parquet:"channel_id,dict"`
	ChannelTitle  string     `parquet:"channel_title,dict"`
	CategoryID    string     `parquet:"category_id,dict"`
	Tags          []string   `parquet:"tags,list"`
	PublishedAt   *time.Time `parquet:"published_at,optional,timestamp(microsecond:utc)"`
	Duration      *string    `parquet:"duration,optional,dict"`
	ThumbnailURL  string     `parquet:"thumbnail_url,dict"`
	ViewCount     *int64     `parquet:"view_count,optional"`
	LikeCount     *int64     `parquet:"like_count,optional"`
	CommentCount  *int64     `parquet:"comment_count,optional"`
	Description   *string    `parquet:"description,optional,dict"` // null with --no-description
}

// ParquetChangesKey is the file's key-value metadata entry holding YouTube's
// changes between its earliest and latest capture, a JSON array of Change.
const ParquetChangesKey = "youtube_changes"

// ParquetRowGroup is the rows per row group, which is buffered until flushed: it bounds the
// writer's memory. Grouped by region, a group holds 100 charts' few hundred videos. Measured at 10M
// entries (BenchmarkHistoryExport): a peak RSS of 75-92 MB, one file or thousands.
const ParquetRowGroup = 20_000

// LimitParquetMemory lowers the process's Go soft memory limit to 48 MiB, never raising a lower one
// (GOMEMLIMIT): the heap is collected before it doubles, which keeps a Parquet export under 100 MB.
func LimitParquetMemory() {
	const limit = 48 << 20
	if debug.SetMemoryLimit(-1) > limit {
		debug.SetMemoryLimit(limit)
	}
}

const (
	parquetMinGroup = ParquetRowGroup / 10 // the fewest rows a row group ends with at a new region
	parquetBatch    = 512                  // the rows handed to the writer at a time
)

// parquetWriter writes ParquetRows (ExportWriter).
type parquetWriter struct {
	w             *parquet.GenericWriter[ParquetRow]
	noDescription bool
	batch         []ParquetRow
	counts        []int64 // backs the batch's count pointers: a row allocates nothing
	region        string  // the last row's
	groupRows     int     // the rows in the current row group
	first, last   time.Time
	texts         map[int64]*parquetText // by VideoKey, at most ExportVideoCache
}

// parquetText is the part of a row that depends on the video text only.
type parquetText struct {
	tags                  []string
	published             *time.Time
	duration, description *string
}

func newParquetWriter(w io.Writer, noDescription bool) *parquetWriter {
	opts := []parquet.WriterOption{parquet.Compression(zstdCodec{}), parquet.MaxRowsPerRowGroup(ParquetRowGroup),
		parquet.CreatedBy("trendfetch", "", "")}
	// Free text's min and max help no reader and cost comparing ~1 KB values.
	for _, c := range []string{"title", "channel_title", "tags", "thumbnail_url", "description"} {
		opts = append(opts, parquet.SkipPageStatistics(c), parquet.SkipPageBounds(c))
	}
	return &parquetWriter{
		w:             parquet.NewGenericWriter[ParquetRow](w, opts...),
		noDescription: noDescription,
		batch:         make([]ParquetRow, 0, parquetBatch),
		counts:        make([]int64, 0, 3*parquetBatch),
		texts:         map[int64]*parquetText{}, // grows to the file's videos (a partition holds few)
	}
}

func (p *parquetWriter) Row(r *ExportRow) error {
	if r.Region != p.region {
		if err := p.endGroup(); err != nil {
			return err
		}
		p.region = r.Region
	}
	if p.groupRows++; p.groupRows == ParquetRowGroup {
		p.groupRows = 0 // the writer ends the group (MaxRowsPerRowGroup)
	}
	t := p.text(r)
	if p.first.IsZero() || r.CapturedAt.Before(p.first) {
		p.first = r.CapturedAt
	}
	if r.CapturedAt.After(p.last) {
		p.last = r.CapturedAt
	}
	var change *string
	if c := ChangeInEffect(r.CapturedAt); c != nil {
		change = &c.Date
	}
	p.batch = append(p.batch, ParquetRow{
		Region: r.Region, CapturedAt: r.CapturedAt.UTC(), Complete: r.Complete, RunID: r.RunID, YouTubeChange: change,
		Rank: int64(r.Rank), VideoID: r.VideoID, Title: r.Title, ChannelID: r.ChannelID, ChannelTitle: r.ChannelTitle,
		CategoryID: r.CategoryID, Tags: t.tags, PublishedAt: t.published, Duration: t.duration, ThumbnailURL: r.ThumbnailURL,
		ViewCount: p.count(r.Views), LikeCount: p.count(r.Likes), CommentCount: p.count(r.Comments),
		Description: t.description,
	})
	if len(p.batch) == cap(p.batch) {
		return p.write()
	}
	return nil
}

// endGroup ends the row group at a new region (ParquetRowGroup), unless it
// is small: rows not grouped by region would make one per capture.
func (p *parquetWriter) endGroup() error {
	if p.groupRows < parquetMinGroup {
		return nil
	}
	if err := p.write(); err != nil {
		return err
	}
	p.groupRows = 0
	return p.w.Flush()
}

// text is the part of r's row that depends on its video's text only,
// made once per video (at most ExportVideoCache kept).
func (p *parquetWriter) text(r *ExportRow) *parquetText {
	if t := p.texts[r.VideoKey]; t != nil && r.VideoKey != 0 {
		return t
	}
	t := &parquetText{tags: splitTags(r.Tags), duration: strPtr(r.Duration)}
	if !r.PublishedAt.IsZero() {
		t.published = new(r.PublishedAt.UTC())
	}
	if !p.noDescription {
		t.description = new(r.Description)
	}
	if len(p.texts) >= ExportVideoCache {
		clear(p.texts)
	}
	p.texts[r.VideoKey] = t
	return t
}

func (p *parquetWriter) write() error {
	_, err := p.w.Write(p.batch)
	clear(p.batch) // drop references to texts the cache may let go
	p.batch, p.counts = p.batch[:0], p.counts[:0]
	return err
}

// count returns n as a ParquetRow count: nil when unknown, else a pointer
// into p.counts (valid until the batch is written).
func (p *parquetWriter) count(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	p.counts = append(p.counts, n.Int64)
	return &p.counts[len(p.counts)-1]
}

// Flush writes the last rows and the footer. A writer is not reused:
// parquet-go v0.32.0's GenericWriter.Reset loses the next footer's paths.
func (p *parquetWriter) Flush() error {
	if err := p.write(); err != nil {
		return err
	}
	p.w.SetKeyValueMetadata(ParquetChangesKey, jsonText(ChangesCrossed(p.first, p.last)))
	return p.w.Close()
}

// zstdCodec is parquet's ZSTD codec with a 512 KB window (parquet-go's 8 MB one took 32 MB of a
// 70 MB export heap), one (~4 MB) encoder for every writer; encoder and decoder are made on first
// use.
type zstdCodec struct{}

var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		// Errors only for invalid options, which these are not.
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithWindowSize(512<<10),
			zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false))
		return enc
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		return dec
	})
)

func (zstdCodec) String() string                            { return "ZSTD" }
func (zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }
func (zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	return zstdEncoder().EncodeAll(src, dst[:0]), nil
}
func (zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	return zstdDecoder().DecodeAll(src, dst[:0])
}
