package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// chart fetches chart=mostPopular for the run's region (narrowed by videoCategoryId when category
// is not ""), page by page, each stored in one transaction. A page token seen twice, a malformed
// page or a page past the documented 200 videos stops it with an error.
func (r *Runner) chart(ctx context.Context, st *runState, category string) error {
	run, pageSize := st.run, st.set.PageSize
	maxPages := (callsite.ChartMax+int(pageSize)-1)/int(pageSize) + 1
	snap := store.Snapshot{Kind: store.KindChart, FirstRank: 1}
	if category != "" {
		snap.Kind, snap.Query = store.KindCategory, category
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
		resp, counts, err := callGiven(ctx, r, st, callsite.VideosList, r.chartRequest(st, category, token).Context)
		if err != nil {
			return err
		}
		if n := len(resp.Items); n > int(pageSize) || snap.FirstRank-1+n > callsite.ChartMax {
			return fmt.Errorf("page %d of the %s chart is malformed: %d items for maxResults=%d (at most %d videos a chart): nothing of it stored", page+1, run.Region, n, pageSize, callsite.ChartMax)
		}
		snap.Videos = st.fetched(counts, resp.Items)
		if err := r.save(ctx, st, snap, fmt.Sprintf("cannot store page %d of the %s chart", page+1, run.Region)); err != nil {
			return err
		}
		snap.FirstRank += len(snap.Videos)
		st.log.Debug().Int("page", page+1).Int("videos", len(snap.Videos)).Str("category", category).Msg("chart page stored")
		token = resp.NextPageToken
		if token == "" || len(resp.Items) == 0 {
			return r.complete(ctx, st, snap.Kind, snap.Query)
		}
		if err := nextChartPage(run.Region, token, seen, snap.FirstRank-1); err != nil {
			return err
		}
	}
}

// chartRequest is the videos.list request of the chart page at token ("" the first).
func (r *Runner) chartRequest(st *runState, category, token string) *youtube.VideosListCall {
	req := r.Service.Videos.List([]string{"snippet", "contentDetails", "statistics"}).
		Chart("mostPopular").RegionCode(st.run.Region).MaxResults(st.set.PageSize)
	if category != "" {
		req = req.VideoCategoryId(category)
	}
	if token != "" {
		req = req.PageToken(token)
	}
	return req
}

// nextChartPage checks that the chart may go on to the page at token after stored videos, and
// marks token seen: a token seen twice or a page past the documented 200 videos is an error.
func nextChartPage(region, token string, seen map[string]bool, stored int) error {
	if seen[token] {
		return fmt.Errorf("chart of %s: the API returned page token %q twice: stopped", region, token)
	}
	if stored >= callsite.ChartMax {
		return fmt.Errorf("chart of %s offers more than the documented %d videos (another page after %d): stopped", region, callsite.ChartMax, stored)
	}
	seen[token] = true
	return nil
}

// save stores one page of a snapshot (its kind, query, first rank and videos; the run, region
// and time are the run's) in one transaction, whole even if a signal arrives now (ctx's
// cancellation ignored); what names it in errors.
func (r *Runner) save(ctx context.Context, st *runState, snap store.Snapshot, what string) error {
	r.scrubTexts(&snap.Query)
	r.scrubTexts(snap.Videos)
	snap.RunID, snap.Region, snap.At = st.run.ID, st.run.Region, r.now()
	err := detached(ctx, func(ctx context.Context) error { return r.Store.SaveSnapshot(ctx, snap) })
	if err == nil {
		st.run.Pages++
		st.run.Videos += len(snap.Videos)
	}
	return r.stored(st, err, what)
}

// complete marks the run's capture of (kind, query) complete, like save.
func (r *Runner) complete(ctx context.Context, st *runState, kind, query string) error {
	r.scrubTexts(&query) // as save stored it
	err := detached(ctx, func(ctx context.Context) error {
		return r.Store.CompleteCapture(ctx, st.run.ID, st.run.Region, kind, query, r.now())
	})
	return r.stored(st, err, fmt.Sprintf("cannot store the end of the %s %s list", st.run.Region, kind))
}

// categories refreshes the region's categories older than CategoriesRefresh.
func (r *Runner) categories(ctx context.Context, st *runState) error {
	at, err := r.Store.CategoriesFetchedAt(ctx, st.run.Region)
	if err != nil {
		return err
	}
	if !at.IsZero() && r.now().Sub(at) < st.set.CategoriesRefresh {
		return nil
	}
	req := r.Service.VideoCategories.List([]string{"snippet"}).RegionCode(st.run.Region)
	resp, err := call(ctx, r, st, callsite.CategoriesList, req.Context)
	if err != nil {
		return err
	}
	cats := make([]store.Category, 0, len(resp.Items))
	for _, c := range resp.Items {
		if c == nil || c.Id == "" || c.Snippet == nil {
			continue
		}
		cats = append(cats, store.Category{ID: c.Id, Title: c.Snippet.Title, Assignable: c.Snippet.Assignable})
	}
	r.scrubTexts(cats)
	err = detached(ctx, func(ctx context.Context) error { return r.Store.UpsertCategories(ctx, st.run.Region, cats, r.now()) })
	return r.stored(st, err, "cannot store categories")
}

// channels sends channels.list id= for the channels of this run's videos
// whose stored data is older than ChannelsRefresh, in full batches of 50; a
// remainder waits in a holding Backlog, else is sent as a last batch.
func (r *Runner) channels(ctx context.Context, st *runState) error {
	stale, err := r.Store.StaleChannels(ctx, st.channelOrder, r.now().Add(-st.set.ChannelsRefresh))
	if err != nil {
		return err
	}
	b := cmp.Or(r.Backlog, &Backlog{})
	for _, id := range stale {
		if !slices.Contains(b.ids, id) {
			b.ids = append(b.ids, id)
		}
	}
	for len(b.ids) >= callsite.MaxIDs || !b.Hold && len(b.ids) > 0 {
		ids := b.ids[:min(callsite.MaxIDs, len(b.ids))]
		if err := r.channelBatch(ctx, st, ids); err != nil {
			return err
		}
		b.ids = b.ids[len(ids):]
	}
	return nil
}

func (r *Runner) channelBatch(ctx context.Context, st *runState, ids []string) error {
	req := r.Service.Channels.List([]string{"snippet", "statistics"}).Id(ids...).MaxResults(callsite.MaxIDs)
	resp, err := call(ctx, r, st, callsite.ChannelsList, req.Context)
	if err != nil {
		return err
	}
	chans := make([]store.Channel, 0, len(ids))
	for _, c := range resp.Items {
		if c == nil || c.Id == "" {
			continue
		}
		ch := store.Channel{ID: c.Id}
		if c.Snippet != nil {
			ch.Title, ch.Country = c.Snippet.Title, c.Snippet.Country
		}
		if s := c.Statistics; s != nil {
			if !s.HiddenSubscriberCount {
				ch.Subscribers = i64(s.SubscriberCount)
			}
			ch.Videos, ch.Views = i64(s.VideoCount), i64(s.ViewCount)
		}
		chans = append(chans, ch)
	}
	// Channels the API did not return (closed) are recorded too: not asked again.
	for _, id := range ids {
		if !slices.ContainsFunc(chans, func(c store.Channel) bool { return c.ID == id }) {
			chans = append(chans, store.Channel{ID: id})
		}
	}
	r.scrubTexts(chans)
	err = detached(ctx, func(ctx context.Context) error { return r.Store.UpsertChannels(ctx, chans, r.now()) })
	return r.stored(st, err, "cannot store channels")
}

// sampleStats samples the videos store.DueForStats gives (docs/operations.md, "What a run does"
// step 4); off without a cost for the call site. A stop is noted (st.note); only stopsRun's are returned.
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
			s := store.Sample{VideoID: it.Id, Views: new(it.Statistics.ViewCount), Likes: new(it.Statistics.LikeCount),
				Comments: new(it.Statistics.CommentCount)}
			clearOmitted(counts, s.VideoID, &s.Views, &s.Likes, &s.Comments)
			samples = append(samples, s)
		}
		err = detached(ctx, func(ctx context.Context) (err error) {
			_, err = r.Store.SaveSamples(ctx, samples, r.now())
			return err
		})
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
	_, rejected := errors.AsType[*CredentialError](err)
	return ctx.Err() != nil || rejected
}

// refreshText refreshes text older than TextCutoff(now), at most TextRefreshPerDay calls per
// credential in 24 hours, and removes the rest (docs/design.md §10). Like sampleStats it never fails the run.
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
		vs := st.fetched(nil, resp.Items)
		r.scrubTexts(vs)
		err = detached(ctx, func(ctx context.Context) error { return r.Store.RefreshText(ctx, vs, r.now()) })
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

// searchHits is one query's hits in rank order, and the units its
// search.list pages cost per bucket.
type searchHits struct {
	q     string
	ids   []string
	units map[string]int64
}

// searches runs the region's queries, fetches the hits and stores them (docs/operations.md, "What
// a run does" step 3). When search.list's own quota is spent (StopError.Site) the rest is skipped, noted.
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
	if err := r.fetchHits(ctx, st, all); err != nil {
		warnUnstored(st, all)
		return err
	}
	for _, h := range all {
		if err := r.saveHits(ctx, st, h); err != nil {
			return err
		}
	}
	return nil
}

// fetchHits fetches the videos of the hits in all that the run has not fetched yet, in batches
// of callsite.MaxIDs ids.
func (r *Runner) fetchHits(ctx context.Context, st *runState, all []searchHits) error {
	var missing []string
	for _, h := range all {
		for _, id := range h.ids {
			if _, ok := st.videos[id]; !ok && !slices.Contains(missing, id) {
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
			return err
		}
		st.fetched(counts, resp.Items)
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

// saveHits stores one query's hits as its search capture, each at its rank (the i-th hit is rank i;
// missing ones leave a gap and a warning); a query with no storable hit is an empty capture.
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
		if err := r.save(ctx, st, store.Snapshot{Kind: store.KindSearch, Query: h.q, FirstRank: first, Videos: pages[first]}, what); err != nil {
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
	token := ""
	for page := 0; page < max(s.MaxPages, 1); page++ {
		resp, err := call(ctx, r, st, callsite.SearchList, r.searchRequest(st, s, token).Context)
		if err == nil && len(resp.Items) > callsite.MaxIDs {
			err = fmt.Errorf("search.list page %d for %q is malformed: %d items for maxResults=%d: nothing of it stored", page+1, s.Q, len(resp.Items), callsite.MaxIDs)
		}
		if err != nil {
			hits.units = spentSince(before, st.run.Units)
			return hits, err
		}
		hits.add(resp.Items)
		if resp.NextPageToken == "" || resp.NextPageToken == token {
			break
		}
		token = resp.NextPageToken
	}
	hits.units = spentSince(before, st.run.Units)
	st.log.Debug().Str("q", s.Q).Int("hits", len(hits.ids)).Interface("units", hits.units).Msg("search done")
	return hits, nil
}

// searchRequest is the search.list request of s's page at token ("" the first).
func (r *Runner) searchRequest(st *runState, s Search, token string) *youtube.SearchListCall {
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
	return req
}

// add appends the video ids of a search page's items, each once.
func (h *searchHits) add(items []*youtube.SearchResult) {
	for _, it := range items {
		if it == nil || it.Id == nil || it.Id.VideoId == "" || slices.Contains(h.ids, it.Id.VideoId) {
			continue
		}
		h.ids = append(h.ids, it.Id.VideoId)
	}
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
