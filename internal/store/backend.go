package store

import (
	"context"
	"time"
)

// Backend is what trendfetch needs of a dataset store: every caller reaches
// the store through it (docs/design.md §2, §10a). *Store implements it on
// both engines; its methods document the meaning. A store opened read-only
// (OpenReadOnly) fails every write method.
type Backend interface {
	// Runs: one record per run of a region (docs/design.md §5).
	StartRun(ctx context.Context, r Run) (int64, error)
	RecordUsage(ctx context.Context, r Run) error
	FinishRun(ctx context.Context, r Run) error
	AbandonRuns(ctx context.Context, credential, region string, before time.Time) (int, error)
	RunsPage(ctx context.Context, q RunsQuery) ([]Run, error)
	LastSuccess(ctx context.Context, credential string) (map[string]time.Time, error)
	CallsSince(ctx context.Context, credential, method string, since time.Time) (int, error)
	Health(ctx context.Context, region string, dayStart time.Time) (RegionHealth, error)

	// What a run stores.
	SaveSnapshot(ctx context.Context, p Snapshot) error
	CompleteCapture(ctx context.Context, runID int64, region, kind, query string, at time.Time) error
	DueForStats(ctx context.Context, region string, runID int64, followedSince, sampledBefore time.Time) ([]string, error)
	SaveSamples(ctx context.Context, samples []Sample, at time.Time) (int, error)
	StaleChannels(ctx context.Context, ids []string, olderThan time.Time) ([]string, error)
	UpsertChannels(ctx context.Context, chs []Channel, at time.Time) error
	CategoriesFetchedAt(ctx context.Context, region string) (time.Time, error)
	UpsertCategories(ctx context.Context, region string, cats []Category, at time.Time) error
	StaleText(ctx context.Context, before time.Time, limit int) ([]string, error)
	RefreshText(ctx context.Context, vs []Video, at time.Time) error

	// Reads: search, charts, a video's history, exports (one snapshot).
	SearchPage(ctx context.Context, q SearchQuery) (hits []Hit, next int, err error)
	CaptureAt(ctx context.Context, q CaptureQuery) (Capture, []Entry, error)
	History(ctx context.Context, id string) (VideoHistory, error)
	ExportRegions(ctx context.Context, q ExportQuery) ([]string, error)
	Export(ctx context.Context, q ExportQuery, fn func(*ExportRow) error) error

	// The storage policy's primitives (Policy applies them).
	LegacyData(ctx context.Context) (bool, error)
	PruneDue(ctx context.Context, before time.Time) (bool, error)
	Prune(ctx context.Context, before time.Time, dryRun bool) (PruneReport, error)
	ApplyCutoffs(ctx context.Context, statsBefore, textBefore time.Time, dryRun bool) (PruneReport, error)

	// MaxOpenConns is the most connections the store opens at once (serve
	// admits half as many heavy requests at a time).
	MaxOpenConns() int
	Close() error
}

var _ Backend = (*Store)(nil)

// MaxOpenConns is the size of the connection pool.
func (s *Store) MaxOpenConns() int { return s.db.Stats().MaxOpenConnections }
