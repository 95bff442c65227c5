package fetch

import (
	"cmp"
	"context"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/store"
)

// categories refreshes the region's categories when the stored copy is
// older than CategoriesRefresh.
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
	err = r.Store.UpsertCategories(context.WithoutCancel(ctx), st.run.Region, cats, r.now())
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
	backlog := cmp.Or(r.Backlog, &Backlog{})
	backlog.add(stale)
	for batch := backlog.next(); batch != nil; batch = backlog.next() {
		if err := r.channelBatch(ctx, st, batch); err != nil {
			return err
		}
		backlog.ids = backlog.ids[len(batch):]
	}
	return nil
}

func (r *Runner) channelBatch(ctx context.Context, st *runState, ids []string) error {
	req := r.Service.Channels.List([]string{"snippet", "statistics"}).Id(ids...).MaxResults(callsite.MaxIDs)
	resp, err := call(ctx, r, st, callsite.ChannelsList, req.Context)
	if err != nil {
		return err
	}
	found := map[string]bool{}
	chans := make([]store.Channel, 0, len(ids))
	for _, c := range resp.Items {
		if c == nil || c.Id == "" {
			continue
		}
		found[c.Id] = true
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
		if !found[id] {
			chans = append(chans, store.Channel{ID: id})
		}
	}
	r.scrubTexts(chans)
	err = r.Store.UpsertChannels(context.WithoutCancel(ctx), chans, r.now())
	return r.stored(st, err, "cannot store channels")
}
