package fetch

import (
	"context"
	"fmt"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// chart fetches chart=mostPopular for the run's region (narrowed by
// videoCategoryId when category is not ""), page by page, each stored in one
// transaction. A page token seen twice, a malformed page or a page past the
// documented 200 videos stops it with an error.
func (r *Runner) chart(ctx context.Context, st *runState, category string) error {
	run := st.run
	pageSize := st.set.PageSize
	maxPages := (callsite.ChartMax+int(pageSize)-1)/int(pageSize) + 1
	kind, query, rank := store.KindChart, "", 1
	if category != "" {
		kind, query = store.KindCategory, category
	}
	seen := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if page >= maxPages {
			return fmt.Errorf("chart of %s did not end after %d pages (the API documents at most %d videos): stopped", run.Region, page, callsite.ChartMax)
		}
		req := r.Service.Videos.List([]string{"snippet", "contentDetails", "statistics"}).
			Chart("mostPopular").RegionCode(run.Region).MaxResults(pageSize)
		if category != "" {
			req = req.VideoCategoryId(category)
		}
		if token != "" {
			req = req.PageToken(token)
		}
		resp, counts, err := callGiven(ctx, r, st, callsite.VideosList, req.Context)
		if err != nil {
			return err
		}
		if n := len(resp.Items); n > int(pageSize) || rank-1+n > callsite.ChartMax {
			return fmt.Errorf("page %d of the %s chart is malformed: %d items for maxResults=%d (at most %d videos a chart): nothing of it stored", page+1, run.Region, n, pageSize, callsite.ChartMax)
		}
		videos := make([]store.Video, 0, len(resp.Items))
		for _, it := range resp.Items {
			if it == nil || it.Id == "" {
				continue
			}
			v := st.videoWithGiven(counts, it)
			st.remember(v)
			videos = append(videos, v)
		}
		what := fmt.Sprintf("cannot store page %d of the %s chart", page+1, run.Region)
		if err := r.save(ctx, st, kind, query, rank, videos, what); err != nil {
			return err
		}
		rank += len(videos)
		st.log.Debug().Int("page", page+1).Int("videos", len(videos)).Str("category", category).Msg("chart page stored")
		token = resp.NextPageToken
		if token == "" || len(resp.Items) == 0 {
			return r.complete(ctx, st, kind, query)
		}
		if seen[token] {
			return fmt.Errorf("chart of %s: the API returned page token %q twice: stopped", run.Region, token)
		}
		if rank-1 >= callsite.ChartMax {
			return fmt.Errorf("chart of %s offers more than the documented %d videos (another page after %d): stopped", run.Region, callsite.ChartMax, rank-1)
		}
		seen[token] = true
	}
}

// save stores one page of a snapshot in one transaction, whole even if a
// signal arrives now (it does not observe ctx's cancellation); what names it
// in a *StoreError.
func (r *Runner) save(ctx context.Context, st *runState, kind, query string, firstRank int, videos []store.Video, what string) error {
	r.scrubTexts(&query)
	r.scrubTexts(videos)
	err := r.Store.SaveSnapshot(context.WithoutCancel(ctx),
		store.Snapshot{RunID: st.run.ID, Region: st.run.Region, Kind: kind, Query: query, FirstRank: firstRank, Videos: videos, At: r.now()})
	if err == nil {
		st.run.Pages++
		st.run.Videos += len(videos)
	}
	return r.stored(st, err, what)
}

// complete marks the run's capture of (kind, query) complete; like save, it
// does not observe ctx's cancellation.
func (r *Runner) complete(ctx context.Context, st *runState, kind, query string) error {
	r.scrubTexts(&query) // as save stored it
	err := r.Store.CompleteCapture(context.WithoutCancel(ctx), st.run.ID, st.run.Region, kind, query, r.now())
	return r.stored(st, err, fmt.Sprintf("cannot store the end of the %s %s list", st.run.Region, kind))
}
