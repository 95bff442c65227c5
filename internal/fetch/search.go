package fetch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// searchHits is one query's hits in rank order, and the units its
// search.list pages cost per bucket.
type searchHits struct {
	q     string
	ids   []string
	units map[string]int64
}

// searches runs the region's search.list queries, fetches every hit not yet
// fetched in this run with videos.list id= in batches of 50, and stores each
// query's hits as a search capture (docs/operations.md, "What a run does").
// When search.list's own Google quota is spent (StopError.Site) the remaining
// queries are skipped, noted on the run, and the run goes on.
func (r *Runner) searches(ctx context.Context, st *runState, searches []Search) error {
	var all []searchHits
	for _, s := range searches {
		hits, err := r.search(ctx, st, s)
		if stop, ok := errors.AsType[*StopError](err); ok && stop.Site != "" {
			warnUnstored(st, []searchHits{hits})
			st.note = stop.Reason
			st.log.Warn().Str("reason", stop.Reason).Msg("searches stopped; the run goes on without search.list")
			break
		}
		all = append(all, hits) // on error too: its first pages may have cost units
		if err != nil {
			warnUnstored(st, all)
			return err
		}
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
	for batch := range slices.Chunk(missing, callsite.MaxIDs) {
		req := r.Service.Videos.List([]string{"snippet", "contentDetails", "statistics"}).Id(batch...).MaxResults(callsite.MaxIDs)
		resp, counts, err := callGiven(ctx, r, st, callsite.VideosList, req.Context)
		if err == nil && len(resp.Items) > len(batch) {
			err = fmt.Errorf("videos.list for %d search hits is malformed: %d items: nothing of it stored", len(batch), len(resp.Items))
		}
		if err != nil {
			warnUnstored(st, all)
			return err
		}
		for _, it := range resp.Items {
			if it != nil && it.Id != "" {
				st.remember(st.videoWithGiven(counts, it))
			}
		}
	}
	for _, h := range all {
		if err := r.saveHits(ctx, st, h); err != nil {
			return err
		}
	}
	return nil
}

// warnUnstored logs each query in all that cost units: its hits are not stored.
func warnUnstored(st *runState, all []searchHits) {
	for _, h := range all {
		if len(h.units) > 0 {
			st.log.Warn().Str("q", h.q).Int("hits", len(h.ids)).Interface("units", h.units).
				Msg("search spent quota but its hits are not stored: the run stopped before they were fetched")
		}
	}
}

// saveHits stores one query's hits as its search capture, each at its rank
// (the i-th hit is rank i; missing ones leave a gap and a warning); a query
// with no storable hit is an empty capture.
func (r *Runner) saveHits(ctx context.Context, st *runState, h searchHits) error {
	var missing []string
	what := fmt.Sprintf("cannot store search %q", h.q)
	pages := map[int][]store.Video{} // first rank -> consecutive hits from it
	for i, first := 0, 1; i < len(h.ids); i++ {
		if v, ok := st.videos[h.ids[i]]; ok {
			pages[first] = append(pages[first], v)
		} else { // deleted or private since it was indexed
			missing, first = append(missing, h.ids[i]), i+2
		}
	}
	if len(pages) == 0 {
		pages[1] = nil // an empty capture
	}
	for _, first := range slices.Sorted(maps.Keys(pages)) {
		if err := r.save(ctx, st, store.KindSearch, h.q, first, pages[first], what); err != nil {
			return err
		}
	}
	switch {
	case len(h.ids) == 0:
		st.log.Info().Str("q", h.q).Interface("units", h.units).Msg("search found no videos; stored an empty capture")
	case len(missing) > 0:
		st.log.Warn().Str("q", h.q).Int("hits", len(h.ids)).Int("stored", len(h.ids)-len(missing)).
			Strs("missing", missing[:min(len(missing), 10)]).Interface("units", h.units).
			Msg("videos.list did not return some search hits (deleted or private since indexed): stored the others at their ranks")
	}
	return r.complete(ctx, st, store.KindSearch, h.q)
}

// search pages through one query's video ids.
func (r *Runner) search(ctx context.Context, st *runState, s Search) (searchHits, error) {
	hits := searchHits{q: s.Q}
	before := maps.Clone(st.run.Units)
	seen := map[string]bool{}
	token := ""
	for page := 0; page < max(s.MaxPages, 1); page++ {
		req := r.Service.Search.List([]string{"id"}).Type("video").RegionCode(st.run.Region).Q(s.Q).MaxResults(callsite.MaxIDs)
		if s.Order != "" {
			req = req.Order(s.Order)
		}
		if s.PublishedAfter > 0 {
			req = req.PublishedAfter(r.now().Add(-s.PublishedAfter).UTC().Format(time.RFC3339))
		}
		if token != "" {
			req = req.PageToken(token)
		}
		resp, err := call(ctx, r, st, callsite.SearchList, req.Context)
		if err == nil && len(resp.Items) > callsite.MaxIDs {
			err = fmt.Errorf("search.list page %d for %q is malformed: %d items for maxResults=%d: nothing of it stored", page+1, s.Q, len(resp.Items), callsite.MaxIDs)
		}
		if err != nil {
			hits.units = spentSince(before, st.run.Units)
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
	hits.units = spentSince(before, st.run.Units)
	st.log.Debug().Str("q", s.Q).Int("hits", len(hits.ids)).Interface("units", hits.units).Msg("search done")
	return hits, nil
}

// spentSince returns the units per bucket added to now since before; buckets
// without a change are left out.
func spentSince(before, now map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for b, u := range now {
		if d := u - before[b]; d != 0 {
			out[b] = d
		}
	}
	return out
}
