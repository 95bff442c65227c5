package fetch

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// sampleStats samples the region's followed videos that are due
// (store.DueForStats) with videos.batchGetStats, 50 ids a call, as stats
// samples. It never fails the run: a stop is noted on it (st.note); only
// stopsRun's errors are returned. Off without a cost for the call site.
func (r *Runner) sampleStats(ctx context.Context, st *runState) error {
	if st.set.StatsTrackFor <= 0 {
		return nil
	}
	if _, err := r.Limiter.Charges(callsite.VideosBatchGetStats); err != nil {
		st.log.Debug().Msg("no quota cost for videos.batchGetStats: statistics step off")
		return nil
	}
	now := r.now()
	due, err := r.Store.DueForStats(ctx, st.run.Region, st.run.ID, now.Add(-st.set.StatsTrackFor), now.Add(-st.set.StatsEvery))
	if err != nil {
		st.note = "statistics step skipped: " + err.Error()
		st.log.Warn().Err(err).Msg("statistics step skipped")
		return nil
	}
	sampled := 0
	for batch := range slices.Chunk(due, callsite.MaxIDs) {
		req := r.Service.Videos.BatchGetStats().Part("statistics", "contentDetails", "snippet").Id(batch...)
		resp, counts, err := callGiven(ctx, r, st, callsite.VideosBatchGetStats, req.Context)
		if err != nil {
			if stopsRun(ctx, err) {
				return err
			}
			st.note = fmt.Sprintf("statistics step stopped after %d of %d due videos: %v", sampled, len(due), err)
			st.log.Warn().Err(err).Int("sampled", sampled).Int("due", len(due)).Msg("statistics step stopped; the chart is stored")
			return nil
		}
		samples := make([]store.Sample, 0, len(resp.Items))
		for _, it := range resp.Items {
			if it == nil || it.Id == "" || it.Statistics == nil {
				continue
			}
			views, likes, comments := it.Statistics.ViewCount, it.Statistics.LikeCount, it.Statistics.CommentCount
			s := store.Sample{VideoID: it.Id, Views: &views, Likes: &likes, Comments: &comments}
			clearOmitted(counts, s.VideoID, &s.Views, &s.Likes, &s.Comments)
			samples = append(samples, s)
		}
		_, err = r.Store.SaveSamples(context.WithoutCancel(ctx), samples, r.now())
		if err := r.stored(st, err, "cannot store statistics of "+st.run.Region); err != nil {
			return err
		}
		sampled += len(batch)
	}
	if len(due) > 0 {
		st.log.Debug().Int("videos", len(due)).Msg("statistics sampled")
	}
	return nil
}

// stopsRun reports whether err, which stopped a step that never fails the
// run, ends it anyway: a cancelled context or a rejected key.
func stopsRun(ctx context.Context, err error) bool {
	var cred *CredentialError
	return ctx.Err() != nil || errors.As(err, &cred)
}
