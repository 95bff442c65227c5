package fetch

import (
	"bytes"
	"context"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// searchHits is one query's hits in rank order.
type searchHits struct {
	q   string
	ids []string
}

// searches runs the region's search.list queries (type=video&regionCode=..,
// up to MaxPages pages of 50 each), then fetches every hit not already
// fetched in this run with videos.list id= in full batches of 50, and
// stores each query's hits as a "search" snapshot, separate from chart
// ranks.
func (r *Runner) searches(ctx context.Context, st *runState, searches []Search) error {
	if len(searches) == 0 {
		return nil
	}
	var all []searchHits
	for _, s := range searches {
		hits, err := r.search(ctx, st, s)
		if err != nil {
			return err
		}
		all = append(all, hits)
	}
	var missing []string
	want := map[string]bool{}
	for _, h := range all {
		for _, id := range h.ids {
			if _, ok := st.videos[id]; !ok && !want[id] {
				want[id] = true
				missing = append(missing, id)
			}
		}
	}
	for start := 0; start < len(missing); start += batchSize {
		batch := missing[start:min(start+batchSize, len(missing))]
		req := r.Service.Videos.List([]string{"snippet", "contentDetails", "statistics"}).Id(batch...).MaxResults(batchSize)
		var raw bytes.Buffer
		resp, err := call(ctx, r, st, callsite.VideosList, func(ctx context.Context) (*youtube.VideoListResponse, error) {
			raw.Reset()
			return req.Context(withRawBody(ctx, &raw)).Do()
		})
		if err != nil {
			return err
		}
		counts, err := givenCounts(raw.Bytes())
		if err != nil {
			return err
		}
		for _, it := range resp.Items {
			if it != nil && it.Id != "" {
				st.remember(videoWithGiven(counts, ConvertVideo(it)))
			}
		}
	}
	for _, h := range all {
		videos := make([]store.Video, 0, len(h.ids))
		for _, id := range h.ids {
			if v, ok := st.videos[id]; ok { // absent: deleted or private since it was indexed
				videos = append(videos, v)
			}
		}
		if len(videos) == 0 {
			continue
		}
		if err := r.save(ctx, st, store.KindSearch, h.q, 1, videos); err != nil {
			return err
		}
		if err := r.complete(ctx, st, store.KindSearch, h.q); err != nil {
			return err
		}
	}
	return nil
}

// search pages through one query's video ids.
func (r *Runner) search(ctx context.Context, st *runState, s Search) (searchHits, error) {
	hits := searchHits{q: s.Q}
	seen := map[string]bool{}
	token := ""
	for page := 0; page < max(s.MaxPages, 1); page++ {
		req := r.Service.Search.List([]string{"id"}).Type("video").RegionCode(st.run.Region).Q(s.Q).MaxResults(batchSize)
		if s.Order != "" {
			req = req.Order(s.Order)
		}
		if s.PublishedAfter > 0 {
			req = req.PublishedAfter(r.now().Add(-s.PublishedAfter).UTC().Format(time.RFC3339))
		}
		if token != "" {
			req = req.PageToken(token)
		}
		resp, err := call(ctx, r, st, callsite.SearchList, func(ctx context.Context) (*youtube.SearchListResponse, error) {
			return req.Context(ctx).Do()
		})
		if err != nil {
			return hits, err
		}
		for _, it := range resp.Items {
			if it == nil || it.Id == nil || it.Id.VideoId == "" || seen[it.Id.VideoId] {
				continue
			}
			seen[it.Id.VideoId] = true
			hits.ids = append(hits.ids, it.Id.VideoId)
		}
		if resp.NextPageToken == "" || resp.NextPageToken == token {
			break
		}
		token = resp.NextPageToken
	}
	st.log.Debug().Str("q", s.Q).Int("hits", len(hits.ids)).Msg("search done")
	return hits, nil
}
