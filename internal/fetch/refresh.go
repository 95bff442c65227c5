package fetch

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// refreshText is the text step under store.policy amended (TextCutoff set):
// stored text older than TextCutoff(now) is refreshed with videos.list id=
// (videos.list.refresh), at most TextRefreshPerDay calls per credential in
// 24 hours; the rest has its text removed, its id kept (docs/design.md §10).
// Like sampleStats it never fails the run.
func (r *Runner) refreshText(ctx context.Context, st *runState) error {
	if st.set.TextCutoff == nil {
		return nil
	}
	now := r.now()
	before := st.set.TextCutoff(now)
	left := 0
	if _, err := r.Limiter.Charges(callsite.VideosListRefresh); err != nil {
		st.log.Debug().Msg("no quota cost for videos.list.refresh: old text is removed, not refreshed")
	} else if used, err := r.Store.CallsSince(ctx, r.Credential, callsite.VideosListRefresh, now.Add(-24*time.Hour)); err != nil {
		st.log.Warn().Err(err).Msg("text refresh skipped")
	} else {
		left = st.set.TextRefreshPerDay - used - st.calls[callsite.VideosListRefresh]
	}
	ids, err := r.Store.StaleText(ctx, before, left*callsite.MaxIDs)
	if err != nil {
		st.log.Warn().Err(err).Msg("text refresh skipped")
	}
	refreshed := 0
	for batch := range slices.Chunk(ids, callsite.MaxIDs) {
		req := r.Service.Videos.List([]string{"snippet"}).Id(batch...).MaxResults(callsite.MaxIDs)
		resp, err := call(ctx, r, st, callsite.VideosListRefresh, req.Context)
		if err != nil {
			if stopsRun(ctx, err) {
				return err
			}
			st.note = fmt.Sprintf("text refresh stopped after %d of %d old texts: %v", refreshed, len(ids), err)
			st.log.Warn().Err(err).Int("refreshed", refreshed).Int("old", len(ids)).Msg("text refresh stopped; the rest is removed")
			break
		}
		vs := make([]store.Video, 0, len(resp.Items))
		for _, it := range resp.Items {
			if it != nil && it.Id != "" {
				vs = append(vs, convertVideo(it))
			}
		}
		r.scrubTexts(vs)
		err = r.Store.RefreshText(context.WithoutCancel(ctx), vs, r.now())
		if err := r.stored(st, err, "cannot store refreshed text"); err != nil {
			return err
		}
		refreshed += len(vs)
	}
	rep, err := r.Store.ApplyCutoffs(context.WithoutCancel(ctx), time.Time{}, before, false)
	if err != nil {
		st.log.Warn().Err(err).Msg("cannot remove old text")
		return nil
	}
	if refreshed > 0 || rep.TextsCleared > 0 {
		st.log.Info().Int("refreshed", refreshed).Int64("removed", rep.TextsCleared).Msg("text older than the policy allows refreshed or removed")
	}
	return nil
}
