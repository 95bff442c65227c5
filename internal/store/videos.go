package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound is returned (wrapped) when a requested row does not exist.
var ErrNotFound = errors.New("not found")

// Video is one YouTube video as stored (videos.list snippet, contentDetails,
// statistics). Videos are upserted by ID: the most recently captured title,
// text and statistics win.
type Video struct {
	// ID is the YouTube video id; required.
	ID           string
	Title        string
	Description  string
	ChannelID    string
	ChannelTitle string
	CategoryID   string
	// Tags are stored joined with '\n' (a tag's own newlines become spaces)
	// and indexed for search.
	Tags []string
	// PublishedAt is the zero time when unknown.
	PublishedAt time.Time
	// Duration is ISO 8601, e.g. "PT4M13S"; "" when unknown.
	Duration string
	// Views, Likes and Comments are nil when the API omitted the statistic
	// (e.g. likes hidden, comments disabled).
	Views, Likes, Comments *int64
	ThumbnailURL           string
}

// ChartEntry is one position of a stored chart.
type ChartEntry struct {
	// Rank is 1-based.
	Rank    int
	VideoID string
	Title   string
}

// KindChart is the snapshots.kind of chart=mostPopular pages.
const KindChart = "chart"

func joinTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	clean := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(t))
		if t != "" {
			clean = append(clean, t)
		}
	}
	return strings.Join(clean, "\n")
}

func splitTags(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// upsertVideo keeps the rowid (ON CONFLICT DO UPDATE, never INSERT OR
// REPLACE) so the FTS index stays valid, and the guarded update trigger
// re-indexes only when searchable text changed. A capture older than the
// stored one (excluded.last_seen_at < last_seen_at) does not overwrite it.
const upsertVideo = `INSERT INTO videos (
    id, title, description, channel_id, channel_title, category_id, tags,
    published_at, duration, view_count, like_count, comment_count,
    thumbnail_url, first_seen_at, last_seen_at
) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)
ON CONFLICT (id) DO UPDATE SET
    title         = excluded.title,
    description   = excluded.description,
    channel_id    = excluded.channel_id,
    channel_title = excluded.channel_title,
    category_id   = excluded.category_id,
    tags          = excluded.tags,
    published_at  = coalesce(excluded.published_at, videos.published_at),
    duration      = coalesce(excluded.duration, videos.duration),
    view_count    = excluded.view_count,
    like_count    = excluded.like_count,
    comment_count = excluded.comment_count,
    thumbnail_url = excluded.thumbnail_url,
    last_seen_at  = excluded.last_seen_at
WHERE excluded.last_seen_at >= videos.last_seen_at`

const insertSnapshot = `INSERT INTO snapshots (run_id, region, kind, rank, video_id, captured_at)
VALUES (?, ?, ?, ?, ?, ?)`

// SavePage stores one page of a chart in ONE transaction: it upserts the
// videos, inserts a snapshot row per video with ranks firstRank ..
// firstRank+len(videos)-1 (firstRank is 1-based, so page 2 of 50 starts at
// 51), and adds 1 to runs.pages and len(videos) to runs.videos of runID.
// at is the capture time (first/last seen, captured_at).
//
// Errors: a video without ID or firstRank < 1 is rejected before writing;
// an unknown runID wraps ErrNotFound; saving the same (run, region, rank)
// twice fails with a constraint error and stores nothing.
func (s *Store) SavePage(ctx context.Context, runID int64, region string, firstRank int, videos []Video, at time.Time) error {
	if firstRank < 1 {
		return fmt.Errorf("cannot save page: first rank %d < 1", firstRank)
	}
	if region == "" {
		return errors.New("cannot save page: empty region")
	}
	for i := range videos {
		if videos[i].ID == "" {
			return fmt.Errorf("cannot save page: video at rank %d has no id", firstRank+i)
		}
	}
	if at.IsZero() {
		at = time.Now()
	}
	ts := fmtTime(at)
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE runs SET pages = pages + 1, videos = videos + ? WHERE id = ?`, len(videos), runID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("run %d: %w", runID, ErrNotFound)
		}
		if len(videos) == 0 {
			return nil
		}
		up, err := tx.PrepareContext(ctx, upsertVideo)
		if err != nil {
			return err
		}
		defer up.Close()
		snap, err := tx.PrepareContext(ctx, insertSnapshot)
		if err != nil {
			return err
		}
		defer snap.Close()
		for i := range videos {
			v := &videos[i]
			if _, err := up.ExecContext(ctx,
				v.ID, v.Title, v.Description, v.ChannelID, v.ChannelTitle, v.CategoryID, joinTags(v.Tags),
				nullTime(v.PublishedAt), nullString(v.Duration),
				nullInt(v.Views), nullInt(v.Likes), nullInt(v.Comments),
				v.ThumbnailURL, ts); err != nil {
				return fmt.Errorf("upsert video %s: %w", v.ID, err)
			}
			if _, err := snap.ExecContext(ctx, runID, region, KindChart, firstRank+i, v.ID, ts); err != nil {
				return fmt.Errorf("snapshot rank %d: %w", firstRank+i, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot save page (run %d, %s, rank %d): %w", runID, region, firstRank, err)
	}
	return nil
}

// Chart returns the chart snapshot of runID in region, in rank order; empty
// (not an error) when nothing was stored.
func (s *Store) Chart(ctx context.Context, runID int64, region string) ([]ChartEntry, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT s.rank, s.video_id, v.title
FROM snapshots s JOIN videos v ON v.id = s.video_id
WHERE s.run_id = ? AND s.region = ? AND s.kind = ?
ORDER BY s.rank`, runID, region, KindChart)
	if err != nil {
		return nil, fmt.Errorf("cannot read chart: %w", err)
	}
	defer rows.Close()
	var out []ChartEntry
	for rows.Next() {
		var e ChartEntry
		if err := rows.Scan(&e.Rank, &e.VideoID, &e.Title); err != nil {
			return nil, fmt.Errorf("cannot read chart: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read chart: %w", err)
	}
	return out, nil
}

// StoredVideo is a Video with the store's bookkeeping.
type StoredVideo struct {
	Video
	// FirstSeen and LastSeen are the first and latest capture times.
	FirstSeen, LastSeen time.Time
}

// Video returns the stored video with the given id, or an error wrapping
// ErrNotFound.
func (s *Store) Video(ctx context.Context, id string) (StoredVideo, error) {
	var (
		v                     StoredVideo
		tags                  string
		pub, dur, first, last sql.NullString
		views, likes, comms   sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, `
SELECT id, title, description, channel_id, channel_title, category_id, tags,
       published_at, duration, view_count, like_count, comment_count,
       thumbnail_url, first_seen_at, last_seen_at
FROM videos WHERE id = ?`, id).Scan(
		&v.ID, &v.Title, &v.Description, &v.ChannelID, &v.ChannelTitle, &v.CategoryID, &tags,
		&pub, &dur, &views, &likes, &comms, &v.ThumbnailURL, &first, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredVideo{}, fmt.Errorf("video %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return StoredVideo{}, fmt.Errorf("cannot read video %s: %w", id, err)
	}
	v.Tags = splitTags(tags)
	v.PublishedAt = parseTime(pub)
	v.Duration = dur.String
	v.Views, v.Likes, v.Comments = intPtr(views), intPtr(likes), intPtr(comms)
	v.FirstSeen, v.LastSeen = parseTime(first), parseTime(last)
	return v, nil
}

// CountVideos returns the number of distinct videos stored.
func (s *Store) CountVideos(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM videos`).Scan(&n); err != nil {
		return 0, fmt.Errorf("cannot count videos: %w", err)
	}
	return n, nil
}
