package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Outcome is how a run ended (runs.outcome).
type Outcome string

// Run outcomes (docs/design.md §5).
const (
	OutcomeRunning          Outcome = "running"           // not finished, or its process died unnoticed
	OutcomeSuccess          Outcome = "success"           // every page stored, every call metered
	OutcomeSuccessUnmetered Outcome = "success_unmetered" // a success with Unmetered > 0 (the runs CHECK)
	OutcomeDenied           Outcome = "denied"            // quota denial or fail-closed policy: see RetryAt
	OutcomeFailed           Outcome = "failed"            // stopped on an error (Reason)
	OutcomeInterrupted      Outcome = "interrupted"       // cancelled by a signal; stored pages are kept
	OutcomeAbandoned        Outcome = "abandoned"         // found running after its process had gone
)

// Run is one `trendfetch run` of one region (the runs table).
type Run struct {
	// ID is assigned by StartRun.
	ID         int64
	Credential string // credential/project name, never a key
	Region     string
	// StartedAt and FinishedAt default to now in StartRun and FinishRun;
	// FinishedAt is zero while running and for abandoned runs.
	StartedAt, FinishedAt time.Time
	// Pages and Videos are counted by SaveSnapshot (FinishRun leaves them).
	Pages, Videos int
	// Units is the units reserved per bucket, e.g. {"units": 4}.
	Units map[string]int64
	// Calls is the API calls sent per method, e.g. {videos.list: 4,
	// search.list: 1}; every attempt counts, retries included.
	Calls map[string]int
	// Unmetered counts calls made fail-open without the limiter.
	Unmetered int
	// ShadowDenials counts, per shadow bucket and call site, the admitted
	// calls that bucket would have denied, e.g. {"new": {"videos.list": 3}};
	// nil when none (stored NULL).
	ShadowDenials map[string]map[string]int64
	Outcome       Outcome
	// Reason is the error or denial reason; on success "" or a note on a
	// step that stopped without failing the run. Cut to MaxReasonBytes.
	Reason string
	// RetryAfter (stored in milliseconds) and RetryAt are set on a quota
	// denial, zero otherwise.
	RetryAfter time.Duration
	RetryAt    time.Time
	// PID and Host identify the process that ran it.
	PID  int
	Host string
}

// MaxReasonBytes bounds a run reason stored or read; ReasonCut ends one cut
// (on a UTF-8 boundary, the marker included in the bound).
const (
	MaxReasonBytes = 1024
	ReasonCut      = " …[cut]"
)

// capReason returns s cut to MaxReasonBytes (see ReasonCut).
func capReason(s string) string {
	if len(s) <= MaxReasonBytes {
		return s
	}
	n := MaxReasonBytes - len(ReasonCut)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ReasonCut
}

// StartRun records a new run with outcome running and returns its id:
// r.Credential, r.Region (required), r.StartedAt (zero: now), r.Units,
// r.Calls, r.Unmetered, r.PID and r.Host are stored, the rest ignored.
func (s *Store) StartRun(ctx context.Context, r Run) (int64, error) {
	if r.Region == "" {
		return 0, errors.New("cannot start run: empty region")
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = time.Now()
	}
	units, calls := usageJSON(r)
	var id int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `
INSERT INTO runs (credential, region, started_at, units, calls, unmetered, outcome, pid, host)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			r.Credential, r.Region, fmtTime(r.StartedAt), units, calls, r.Unmetered, string(OutcomeRunning),
			sql.Null[int]{V: r.PID, Valid: r.PID != 0}, r.Host).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("cannot start run: %w", err)
	}
	return id, nil
}

// usageJSON is r.Units and r.Calls in JSON, "{}" when empty (maps of
// numbers cannot fail to encode).
func usageJSON(r Run) (units, calls string) {
	units, calls = "{}", "{}"
	if len(r.Units) > 0 {
		units = jsonText(r.Units)
	}
	if len(r.Calls) > 0 {
		calls = jsonText(r.Calls)
	}
	return units, calls
}

// shadowJSON is r.ShadowDenials in JSON, nil (NULL) when none.
func shadowJSON(r Run) any {
	if len(r.ShadowDenials) == 0 {
		return nil
	}
	return jsonText(r.ShadowDenials)
}

// FinishRun records the end of run r.ID (all but the pages and videos
// SaveSnapshot counts). Errors: an invalid or running outcome, a success
// not matching r.Unmetered (the table's CHECK); ErrNotFound (wrapped);
// ErrPagesLost (wrapped) when the store holds fewer of the run's pages than
// r.Pages: the run is then recorded failed and its captures partial.
func (s *Store) FinishRun(ctx context.Context, r Run) error {
	if !slices.Contains([]Outcome{OutcomeSuccess, OutcomeSuccessUnmetered, OutcomeDenied, OutcomeFailed,
		OutcomeInterrupted, OutcomeAbandoned}, r.Outcome) {
		return fmt.Errorf("cannot finish run %d: invalid outcome %q", r.ID, r.Outcome)
	}
	if r.FinishedAt.IsZero() {
		r.FinishedAt = time.Now()
	}
	var lost error
	err := s.withTx(ctx, func(tx *sql.Tx) (err error) {
		if lost, err = keptPages(ctx, tx, &r); err != nil {
			return err
		}
		return finishRun(ctx, tx, r)
	})
	if err != nil {
		return fmt.Errorf("cannot finish run %d: %w", r.ID, err)
	}
	return lost
}

// ErrPagesLost is returned (wrapped) by FinishRun when pages the run saved are not in the store:
// PostgreSQL commits a page without waiting for the disk and lost it in a crash
// (docs/design.md §10a).
var ErrPagesLost = errors.New("pages lost by the database")

// keptPages checks in tx that the store holds the r.Pages pages run r saved. When it holds fewer,
// it marks the run's captures partial, sets r's outcome failed with the reason, and returns
// ErrPagesLost wrapped (the caller records r, then reports it).
func keptPages(ctx context.Context, tx *sql.Tx, r *Run) (lost, err error) {
	var kept int
	if err := tx.QueryRowContext(ctx, `SELECT pages FROM runs WHERE id = ?`, r.ID).Scan(&kept); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	if kept >= r.Pages {
		return nil, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE captures SET complete = 0 WHERE run_id = ?`, r.ID); err != nil {
		return nil, err
	}
	lost = fmt.Errorf("run %d: %w: %d of its %d pages stored (a server crash?): recorded failed, its captures partial",
		r.ID, ErrPagesLost, kept, r.Pages)
	r.Outcome, r.Reason = OutcomeFailed, lost.Error()
	return lost, nil
}

// finishRun writes run r's end in tx; ErrNotFound when no such run.
func finishRun(ctx context.Context, tx *sql.Tx, r Run) error {
	units, calls := usageJSON(r)
	var retryMS any
	if r.RetryAfter > 0 {
		retryMS = (r.RetryAfter + time.Millisecond - 1).Milliseconds() // round up: never early
	}
	return execOneRun(ctx, tx, `
UPDATE runs SET finished_at = ?, outcome = ?, reason = ?, retry_after_ms = ?, retry_at = ?,
                units = ?, calls = ?, unmetered = ?, shadow_denials = ?
WHERE id = ?`,
		fmtTime(r.FinishedAt), string(r.Outcome), capReason(r.Reason), retryMS, nullTime(r.RetryAt),
		units, calls, r.Unmetered, shadowJSON(r), r.ID)
}

// RecordUsage stores r.Units, r.Calls, r.Unmetered and r.ShadowDenials on
// running run r.ID (a killed run still shows them); an unknown or finished
// id: ErrNotFound.
func (s *Store) RecordUsage(ctx context.Context, r Run) error {
	units, calls := usageJSON(r)
	err := s.updateOneRun(ctx, `UPDATE runs SET units = ?, calls = ?, unmetered = ?, shadow_denials = ? WHERE id = ? AND outcome = ?`,
		units, calls, r.Unmetered, shadowJSON(r), r.ID, string(OutcomeRunning))
	if err != nil {
		return fmt.Errorf("cannot record usage of run %d: %w", r.ID, err)
	}
	return nil
}

// updateOneRun runs query, an UPDATE of one run, in a transaction;
// ErrNotFound when it matched no row.
func (s *Store) updateOneRun(ctx context.Context, query string, args ...any) error {
	return s.withTx(ctx, func(tx *sql.Tx) error { return execOneRun(ctx, tx, query, args...) })
}

// execOneRun runs query, an UPDATE of one run, in tx; ErrNotFound when it matched no row.
func execOneRun(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrNotFound
	}
	return nil
}

// Runs returns the most recent runs, newest first (RunsPage). limit <= 0
// returns all runs.
func (s *Store) Runs(ctx context.Context, limit int) ([]Run, error) {
	return s.RunsPage(ctx, RunsQuery{Limit: limit})
}

// RunsQuery selects a page of runs, newest first.
type RunsQuery struct {
	// Region, when set, keeps only that region's runs.
	Region string
	// Before, when > 0, keeps only the runs after run Before in the order
	// (older; all for an unknown id): the id of the last run of the
	// previous page (its cursor).
	Before int64
	// Limit is the most runs returned; <= 0 means all.
	Limit int
}

// RunsPage returns the runs q selects, newest first (by started_at, then
// id: a copied run keeps its time, not its id), each reason cut to
// MaxReasonBytes.
func (s *Store) RunsPage(ctx context.Context, q RunsQuery) ([]Run, error) {
	limit := int64(q.Limit)
	if limit <= 0 {
		limit = 1 << 62 // no limit, on both engines (an int64: 32-bit builds too)
	}
	// substr counts characters: MaxReasonBytes+1 tell capReason it is longer.
	// The cast makes PostgreSQL take the cursor as 64-bit (else int4 from 0).
	var out []Run
	err := each(ctx, s.db, `
SELECT `+runColumns+`
FROM runs
WHERE (?1 = '' OR region = ?1) AND (CAST(?2 AS BIGINT) <= 0
    OR (started_at, id) < (coalesce((SELECT started_at FROM runs WHERE id = ?2), '9999'), ?2))
ORDER BY started_at DESC, id DESC LIMIT ?3`, []any{q.Region, q.Before, limit, MaxReasonBytes + 1}, func(rows *sql.Rows) error {
		r, err := scanRun(rows)
		out = append(out, r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list runs: %w", err)
	}
	return out, nil
}

// runColumns are the columns scanRun reads (?4: MaxReasonBytes+1, so that capReason sees a longer reason).
const runColumns = `id, credential, region, started_at, finished_at, pages, videos, units, calls, unmetered,
       outcome, substr(reason, 1, ?4), retry_after_ms, retry_at, pid, host, shadow_denials`

// scanRun reads a row of runColumns.
func scanRun(rows *sql.Rows) (Run, error) {
	var (
		r                          Run
		started, finished, retryAt sql.NullString
		shadow                     sql.NullString
		units, calls, outcome      string
		retryMS, pid               sql.NullInt64
	)
	if err := rows.Scan(&r.ID, &r.Credential, &r.Region, &started, &finished, &r.Pages, &r.Videos,
		&units, &calls, &r.Unmetered, &outcome, &r.Reason, &retryMS, &retryAt, &pid, &r.Host, &shadow); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt, r.RetryAt = parseTime(started), parseTime(finished), parseTime(retryAt)
	r.Outcome, r.Reason = Outcome(outcome), capReason(r.Reason)
	r.RetryAfter = time.Duration(retryMS.Int64) * time.Millisecond
	r.PID = int(pid.Int64)
	err := errors.Join(json.Unmarshal([]byte(units), &r.Units), json.Unmarshal([]byte(calls), &r.Calls))
	if shadow.Valid {
		err = errors.Join(err, json.Unmarshal([]byte(shadow.String), &r.ShadowDenials))
	}
	if err != nil {
		return r, fmt.Errorf("run %d units, calls or shadow denials: %w", r.ID, err)
	}
	return r, nil
}

// AbandonRuns marks the runs of (credential, region) still running that
// started before before as OutcomeAbandoned, with reason "process died;
// found by run N" (N the newest run started since) or "...; found at TIME",
// and returns how many. The caller holds the region's lease.
func (s *Store) AbandonRuns(ctx context.Context, credential, region string, before time.Time) (int, error) {
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var finder sql.NullInt64
		if err := tx.QueryRowContext(ctx, `
SELECT max(id) FROM runs WHERE credential = ? AND region = ? AND started_at >= ?`,
			credential, region, fmtTime(before)).Scan(&finder); err != nil {
			return err
		}
		reason := "process died; found at " + before.UTC().Format(time.RFC3339)
		if finder.Valid {
			reason = fmt.Sprintf("process died; found by run %d", finder.Int64)
		}
		res, err := tx.ExecContext(ctx, `
UPDATE runs SET outcome = ?, reason = ?
WHERE credential = ? AND region = ? AND outcome = ? AND started_at < ?`,
			string(OutcomeAbandoned), reason, credential, region, string(OutcomeRunning), fmtTime(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cannot mark abandoned runs of %s/%s: %w", credential, region, err)
	}
	return int(n), nil
}

// LastSuccess returns, per region, when the latest successful run of
// credential finished (regions without one absent).
func (s *Store) LastSuccess(ctx context.Context, credential string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := each(ctx, s.db, `
SELECT region, max(finished_at) FROM runs
WHERE credential = ? AND outcome = ? AND finished_at IS NOT NULL
GROUP BY region`, []any{credential, string(OutcomeSuccess)}, func(rows *sql.Rows) error {
		var region string
		var at sql.NullString
		if err := rows.Scan(&region, &at); err != nil {
			return err
		}
		if t := parseTime(at); !t.IsZero() {
			out[region] = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read last successful runs: %w", err)
	}
	return out, nil
}

// RegionHealth is how a region's runs stand (GET /v1/dashboard).
type RegionHealth struct {
	// LastSuccessAt is when its newest successful run (success or
	// success_unmetered) finished (UTC); null when none.
	LastSuccessAt *time.Time `json:"last_success_at"`
	// ConsecutiveFailures counts its runs since that success (or ever)
	// that ended failed, denied, interrupted or abandoned.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// LastStartedAt, LastOutcome and LastReason are its newest run's (null
	// when none).
	LastStartedAt *time.Time `json:"last_started_at"`
	LastOutcome   *Outcome   `json:"last_outcome"`
	LastReason    *string    `json:"last_reason"`
	// UnitsToday is the units its runs started at or after the day's
	// start reserved, per bucket ({} when none).
	UnitsToday map[string]int64 `json:"units_today"`
}

// Health returns region's RegionHealth, counting units of runs started
// at or after dayStart (the quota day's start: midnight Pacific Time).
func (s *Store) Health(ctx context.Context, region string, dayStart time.Time) (RegionHealth, error) {
	h := RegionHealth{UnitsToday: map[string]int64{}}
	var last sql.NullString
	err := s.db.QueryRowContext(ctx, `
WITH ok AS (SELECT started_at, id, finished_at FROM runs WHERE region = ?1 AND outcome IN ('success', 'success_unmetered')
            ORDER BY started_at DESC, id DESC LIMIT 1)
SELECT (SELECT finished_at FROM ok), (SELECT count(*) FROM runs WHERE region = ?1
        AND (NOT EXISTS (SELECT 1 FROM ok) OR (started_at, id) > (SELECT started_at, id FROM ok))
        AND outcome NOT IN ('running', 'success', 'success_unmetered'))`, region).Scan(&last, &h.ConsecutiveFailures)
	if err != nil {
		return h, fmt.Errorf("cannot read the runs of %s: %w", region, err)
	}
	h.LastSuccessAt = jsonTime(parseTime(last))
	runs, err := s.RunsPage(ctx, RunsQuery{Region: region, Limit: 1})
	if err != nil {
		return h, err
	}
	if len(runs) > 0 {
		r := runs[0]
		h.LastStartedAt, h.LastOutcome, h.LastReason = jsonTime(r.StartedAt), &r.Outcome, strPtr(r.Reason)
	}
	units, err := column[string](ctx, s.db, `SELECT units FROM runs WHERE region = ?1 AND started_at >= ?2`,
		region, fmtTime(dayStart))
	for _, u := range units {
		var m map[string]int64
		if err = json.Unmarshal([]byte(u), &m); err != nil {
			break
		}
		for k, n := range m {
			h.UnitsToday[k] += n
		}
	}
	if err != nil {
		return h, fmt.Errorf("cannot read the units of %s: %w", region, err)
	}
	return h, nil
}

// MarshalJSON writes r with the keys below: times RFC 3339 UTC, durations
// in milliseconds, null for unknown (unfinished, no reason, not denied).
func (r Run) MarshalJSON() ([]byte, error) {
	var dur, retryMS *int64
	if !r.FinishedAt.IsZero() && !r.StartedAt.IsZero() {
		dur = new(r.FinishedAt.Sub(r.StartedAt).Milliseconds())
	}
	if r.RetryAfter > 0 {
		retryMS = new(r.RetryAfter.Milliseconds())
	}
	units, calls := usageJSON(r)
	shadow := r.ShadowDenials
	if len(shadow) == 0 {
		shadow = nil // null, as stored
	}
	return json.Marshal(struct {
		ID           int64           `json:"id"`
		Credential   string          `json:"credential"`
		Region       string          `json:"region"`
		StartedAt    *time.Time      `json:"started_at"`
		FinishedAt   *time.Time      `json:"finished_at"`
		DurationMS   *int64          `json:"duration_ms"`
		Pages        int             `json:"pages"`
		Videos       int             `json:"videos"`
		Units        json.RawMessage `json:"units"`
		Calls        json.RawMessage `json:"calls"`
		Unmetered    int             `json:"unmetered"`
		Shadow       any             `json:"shadow_denials"`
		Outcome      Outcome         `json:"outcome"`
		Reason       *string         `json:"reason"`
		RetryAfterMS *int64          `json:"retry_after_ms"`
		RetryAt      *time.Time      `json:"retry_at"`
		PID          int             `json:"pid"`
		Host         string          `json:"host"`
	}{r.ID, r.Credential, r.Region, jsonTime(r.StartedAt), jsonTime(r.FinishedAt), dur, r.Pages, r.Videos,
		json.RawMessage(units), json.RawMessage(calls), r.Unmetered, shadow, r.Outcome, strPtr(r.Reason), retryMS,
		jsonTime(r.RetryAt), r.PID, r.Host})
}
