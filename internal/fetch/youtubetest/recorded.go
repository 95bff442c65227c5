package youtubetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/callsite"
)

// SetCategories sets the videoCategories.list answer for region from raw, a recorded
// youtube#videoCategoryListResponse such as the public datasets' US_category_id.json or
// nonUS_category_id.json (docs/design.md §7). region "" sets the default
// served to every region without its own list. The items are served with their recorded ids,
// etags and snippets; the envelope etag is recomputed from the content. raw must decode as
// a videoCategoryListResponse with at least one item, else SetCategories returns an error and
// changes nothing.
func (s *Server) SetCategories(region string, raw []byte) error {
	var resp youtube.VideoCategoryListResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("cannot set categories for region %q: %w", region, err)
	}
	if resp.Kind != "" && resp.Kind != "youtube#videoCategoryListResponse" {
		return fmt.Errorf("cannot set categories for region %q: kind is %q, want youtube#videoCategoryListResponse", region, resp.Kind)
	}
	if len(resp.Items) == 0 {
		return fmt.Errorf("cannot set categories for region %q: no items", region)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.categories[strings.ToUpper(region)] = &resp
	return nil
}

// SetSearchPages sets the pages that search.list serves, in order, each raw a recorded
// youtube#searchListResponse such as the recorded pyyoutube__search_search_by_keywords_p1.json
// and _p2.json (docs/design.md §7). The first page is served without pageToken; page i+1 is served for page i's
// nextPageToken; the last page's nextPageToken is removed so a client's pagination ends.
// The query (q, type, regionCode, maxResults, ...) is not interpreted: every search returns
// these pages. Each request costs the search.list cost (100 units by default). An error
// changes nothing.
//
// Every video the pages find is also served by videos.list id= (as Google serves a video
// it finds), built from its search result: id and snippet (title, description, channel,
// publishedAt, thumbnails), without statistics or contentDetails, which a search result
// does not carry. A video of a chart or of AddVideos with the same id takes precedence.
func (s *Server) SetSearchPages(raw ...[]byte) error {
	pages := make([]*youtube.SearchListResponse, 0, len(raw))
	for i, b := range raw {
		var p youtube.SearchListResponse
		if err := json.Unmarshal(b, &p); err != nil {
			return fmt.Errorf("cannot set search page %d: %w", i+1, err)
		}
		if p.Kind != "" && p.Kind != "youtube#searchListResponse" {
			return fmt.Errorf("cannot set search page %d: kind is %q, want youtube#searchListResponse", i+1, p.Kind)
		}
		pages = append(pages, &p)
	}
	if n := len(pages); n > 0 {
		pages[n-1].NextPageToken = ""
	}
	for i := 1; i < len(pages); i++ {
		if pages[i-1].NextPageToken == "" {
			return fmt.Errorf("cannot set search page %d: page %d has no nextPageToken", i+1, i)
		}
	}
	found := map[string]*youtube.Video{}
	for _, p := range pages {
		for _, it := range p.Items {
			if it != nil && it.Id != nil && it.Id.VideoId != "" && found[it.Id.VideoId] == nil {
				found[it.Id.VideoId] = videoOfSearchResult(it)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.search, s.searchVideos = pages, found
	return nil
}

// videoOfSearchResult is the youtube#video that videos.list serves for a video a search
// result found: its id and the snippet fields the two resources share.
func videoOfSearchResult(it *youtube.SearchResult) *youtube.Video {
	v := &youtube.Video{Kind: "youtube#video", Id: it.Id.VideoId}
	if sn := it.Snippet; sn != nil {
		v.Snippet = &youtube.VideoSnippet{
			PublishedAt: sn.PublishedAt, ChannelId: sn.ChannelId, Title: sn.Title, Description: sn.Description,
			Thumbnails: sn.Thumbnails, ChannelTitle: sn.ChannelTitle, LiveBroadcastContent: sn.LiveBroadcastContent,
		}
	}
	b, _ := json.Marshal(v)
	v.Etag = etagOf(b)
	return v
}

// SetChannels adds the channels of raw, a recorded youtube#channelListResponse such as
// pyyoutube__channels_info_multiple.json (docs/design.md §7), to those channels.list
// serves (a channel with an id already known replaces it). channels.list answers id=a,b,...
// (unknown ids are absent) and forHandle=@name (matched against snippet.customUrl,
// case-insensitively); other filters return no channels.
func (s *Server) SetChannels(raw []byte) error {
	var resp youtube.ChannelListResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("cannot set channels: %w", err)
	}
	if resp.Kind != "" && resp.Kind != "youtube#channelListResponse" {
		return fmt.Errorf("cannot set channels: kind is %q, want youtube#channelListResponse", resp.Kind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range resp.Items {
		replaced := false
		for i, old := range s.channels {
			if old.Id == c.Id {
				s.channels[i], replaced = c, true
			}
		}
		if !replaced {
			s.channels = append(s.channels, c)
		}
	}
	return nil
}

func (s *Server) serveCategories(w http.ResponseWriter, r *http.Request, q url.Values) {
	parts, ok := parseParts(w, q, &youtube.VideoCategory{})
	if !ok {
		return
	}
	ids, region := multi(q, "id"), strings.ToUpper(q.Get("regionCode"))
	if (len(ids) == 0) == (region == "") {
		writeError(w, errMissingFilter("id, regionCode"))
		return
	}
	resp := &youtube.VideoCategoryListResponse{Kind: "youtube#videoCategoryListResponse", Items: []*youtube.VideoCategory{}}
	resp.ForceSendFields = []string{"Items"}
	s.mu.Lock()
	if region != "" {
		list := s.categories[region]
		if list == nil {
			list = s.categories[""]
		}
		if list != nil {
			for _, c := range list.Items {
				resp.Items = append(resp.Items, project(c, parts))
			}
		}
	} else {
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		seen := map[string]bool{}
		for _, list := range s.categories {
			for _, c := range list.Items {
				if want[c.Id] && !seen[c.Id] {
					seen[c.Id] = true
					resp.Items = append(resp.Items, project(c, parts))
				}
			}
		}
	}
	s.mu.Unlock()
	writeList(w, r, resp, func(e string) { resp.Etag = e })
}

func (s *Server) serveSearch(w http.ResponseWriter, r *http.Request, q url.Values) {
	parts, ok := parseParts(w, q, &youtube.SearchResult{})
	if !ok {
		return
	}
	s.mu.Lock()
	pages := s.search
	s.mu.Unlock()
	idx := 0
	if tok := q.Get("pageToken"); tok != "" {
		idx = -1
		for i := 1; i < len(pages); i++ {
			if pages[i-1].NextPageToken == tok {
				idx = i
				break
			}
		}
		if idx < 0 {
			writeError(w, errInvalidPageToken())
			return
		}
	}
	resp := &youtube.SearchListResponse{Kind: "youtube#searchListResponse", Items: []*youtube.SearchResult{}}
	resp.ForceSendFields = []string{"Items"}
	if idx < len(pages) {
		p := pages[idx]
		resp.NextPageToken, resp.PrevPageToken, resp.RegionCode = p.NextPageToken, p.PrevPageToken, p.RegionCode
		resp.PageInfo = p.PageInfo
		for _, it := range p.Items {
			resp.Items = append(resp.Items, project(it, parts))
		}
	} else {
		resp.PageInfo = pageInfo(0, 0)
	}
	writeList(w, r, resp, func(e string) { resp.Etag = e })
}

func (s *Server) serveChannels(w http.ResponseWriter, r *http.Request, q url.Values) {
	parts, ok := parseParts(w, q, &youtube.Channel{})
	if !ok {
		return
	}
	ids, handle := multi(q, "id"), q.Get("forHandle")
	if filters(q, "id", "forHandle", "forUsername", "mine", "managedByMe", "categoryId") != 1 {
		writeError(w, errMissingFilter("categoryId, forHandle, forUsername, id, managedByMe, mine"))
		return
	}
	resp := &youtube.ChannelListResponse{Kind: "youtube#channelListResponse", Items: []*youtube.Channel{}}
	resp.ForceSendFields = []string{"Items"}
	s.mu.Lock()
	switch {
	case len(ids) > 0:
		if len(ids) > callsite.MaxIDs {
			s.mu.Unlock()
			writeError(w, errTooManyIDs(len(ids)))
			return
		}
		for _, id := range ids {
			for _, c := range s.channels {
				if c.Id == id {
					resp.Items = append(resp.Items, project(c, parts))
				}
			}
		}
	case handle != "":
		h := "@" + strings.TrimPrefix(strings.ToLower(handle), "@")
		for _, c := range s.channels {
			if c.Snippet != nil && strings.ToLower(c.Snippet.CustomUrl) == h {
				resp.Items = append(resp.Items, project(c, parts))
			}
		}
	}
	s.mu.Unlock()
	resp.PageInfo = pageInfo(int64(len(resp.Items)), max(int64(len(resp.Items)), defaultPage))
	writeList(w, r, resp, func(e string) { resp.Etag = e })
}
