package youtubetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// SetCategories sets the videoCategories.list answer for region ("" = the default of every
// region without its own) to raw, a recorded youtube#videoCategoryListResponse (docs/design.md
// §7). raw that does not decode as one with at least one item is an error and changes nothing.
func (s *Server) SetCategories(region string, raw []byte) error {
	var resp youtube.VideoCategoryListResponse
	err := decodeKind(raw, &resp, "youtube#videoCategoryListResponse")
	if err == nil && len(resp.Items) == 0 {
		err = errors.New("no items")
	}
	if err != nil {
		return fmt.Errorf("cannot set categories for region %q: %w", region, err)
	}
	s.locked(func() { s.categories[strings.ToUpper(region)] = &resp })
	return nil
}

// SetSearchPages sets the pages every search.list serves, whatever its query, each raw a
// recorded youtube#searchListResponse: the first without pageToken, page i+1 for page i's
// nextPageToken (removed from the last). An error changes nothing. videos.list id= serves the
// videos found too, from their search results (id, snippet), after the charts' and AddVideos'.
func (s *Server) SetSearchPages(raw ...[]byte) error {
	pages := make([]*youtube.SearchListResponse, len(raw))
	found := map[string]*youtube.Video{}
	for i, b := range raw {
		pages[i] = new(youtube.SearchListResponse)
		if err := decodeKind(b, pages[i], "youtube#searchListResponse"); err != nil {
			return fmt.Errorf("cannot set search page %d: %w", i+1, err)
		}
		if i == len(raw)-1 {
			pages[i].NextPageToken = ""
		} else if pages[i].NextPageToken == "" {
			return fmt.Errorf("cannot set search page %d: page %d has no nextPageToken", i+2, i+1)
		}
		for _, it := range pages[i].Items {
			if it != nil && it.Id != nil && it.Id.VideoId != "" && found[it.Id.VideoId] == nil {
				found[it.Id.VideoId] = videoOfSearchResult(it)
			}
		}
	}
	s.locked(func() { s.search, s.searchVideos = pages, found })
	return nil
}

// videoOfSearchResult is the youtube#video of a search result: id and the snippet fields both
// resources have (same JSON names; a video's snippet has no publishTime).
func videoOfSearchResult(it *youtube.SearchResult) *youtube.Video {
	b, _ := json.Marshal(map[string]any{"kind": "youtube#video", "id": it.Id.VideoId, "snippet": it.Snippet})
	v := new(youtube.Video)
	_ = json.Unmarshal(b, v) // b is a video's JSON
	return cloneVideos([]*youtube.Video{v})[0]
}

// SetChannels adds the channels of raw, a recorded youtube#channelListResponse, to those
// channels.list serves by id (docs/design.md §7), replacing a channel of the same id.
func (s *Server) SetChannels(raw []byte) error {
	var resp youtube.ChannelListResponse
	if err := decodeKind(raw, &resp, "youtube#channelListResponse"); err != nil {
		return fmt.Errorf("cannot set channels: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range resp.Items {
		if i := slices.IndexFunc(s.channels, func(old *youtube.Channel) bool { return old.Id == c.Id }); i >= 0 {
			s.channels[i] = c
		} else {
			s.channels = append(s.channels, c)
		}
	}
	return nil
}

// serveCategories answers GET /youtube/v3/videoCategories: regionCode; id answers none
// (docs/design.md §7).
func (s *Server) serveCategories(q url.Values, parts map[string]bool) (any, *errorResponse) {
	ids, region := multi(q, "id"), strings.ToUpper(q.Get("regionCode"))
	if (len(ids) == 0) == (region == "") {
		return nil, errMissingFilter("id, regionCode")
	}
	resp := &youtube.VideoCategoryListResponse{Kind: "youtube#videoCategoryListResponse"}
	s.mu.Lock()
	if list := cmp.Or(s.categories[region], s.categories[""]); region != "" && list != nil {
		for _, c := range list.Items {
			resp.Items = append(resp.Items, project(c, parts))
		}
	}
	s.mu.Unlock()
	return resp, nil
}

// serveSearch answers GET /youtube/v3/search: part and pageToken; see SetSearchPages.
func (s *Server) serveSearch(q url.Values, parts map[string]bool) (any, *errorResponse) {
	pages := get(s, func() []*youtube.SearchListResponse { return s.search })
	idx := 0
	if tok := q.Get("pageToken"); tok != "" {
		if idx = 1 + slices.IndexFunc(pages, func(p *youtube.SearchListResponse) bool { return p.NextPageToken == tok }); idx == 0 {
			return nil, errInvalidPageToken
		}
	}
	resp := &youtube.SearchListResponse{Kind: "youtube#searchListResponse", PageInfo: pageInfo(0, 0)}
	if idx < len(pages) {
		p := pages[idx]
		resp.NextPageToken, resp.PrevPageToken, resp.RegionCode, resp.PageInfo = p.NextPageToken, p.PrevPageToken, p.RegionCode, p.PageInfo
		for _, it := range p.Items {
			resp.Items = append(resp.Items, project(it, parts))
		}
	}
	return resp, nil
}

// serveChannels answers GET /youtube/v3/channels: part and id (SetChannels); the other filters
// answer none.
func (s *Server) serveChannels(q url.Values, parts map[string]bool) (any, *errorResponse) {
	ids := multi(q, "id")
	if filters(q, "id", "forHandle", "forUsername", "mine", "managedByMe", "categoryId") != 1 {
		return nil, errMissingFilter("categoryId, forHandle, forUsername, id, managedByMe, mine")
	} else if len(ids) > callsite.MaxIDs {
		return nil, errTooManyIDs(len(ids))
	}
	resp := &youtube.ChannelListResponse{Kind: "youtube#channelListResponse"}
	s.mu.Lock()
	for _, id := range ids {
		for _, c := range s.channels {
			if c.Id == id {
				resp.Items = append(resp.Items, project(c, parts))
			}
		}
	}
	s.mu.Unlock()
	resp.PageInfo = pageInfo(int64(len(resp.Items)), max(int64(len(resp.Items)), defaultPage))
	return resp, nil
}
