package youtubetest

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/api/youtube/v3"
)

// SampleSize is the number of videos in Sample: 60, so a client paging with maxResults=50
// sees two pages.
const SampleSize = 60

// sampleCategories are real YouTube category ids and titles (public, stable).
var sampleCategories = []struct{ id, title string }{
	{"1", "Film & Animation"}, {"2", "Autos & Vehicles"}, {"10", "Music"}, {"15", "Pets & Animals"},
	{"17", "Sports"}, {"20", "Gaming"}, {"22", "People & Blogs"}, {"23", "Comedy"},
	{"24", "Entertainment"}, {"25", "News & Politics"}, {"26", "Howto & Style"},
	{"27", "Education"}, {"28", "Science & Technology"},
}

// Sample returns a built-in synthetic chart of SampleSize fresh videos in rank order, for
// demos and tests without the recorded data. Everything is invented and says so: ids
// "sample-0001" ... "sample-0060" (11 characters, like real ids), titles "Sample video N
// (synthetic)", 12 channels "Sample Channel N" (SyntheticChannelID), real category ids in
// turn, descending counts (every 10th video without ratings, every 7th without comments,
// every 5th without tags), durations, and published times in January 2026.
func Sample() []*youtube.Video {
	base := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	videos := make([]*youtube.Video, 0, SampleSize)
	for i := 1; i <= SampleSize; i++ {
		id, ch, cat := fmt.Sprintf("sample-%04d", i), fmt.Sprintf("Sample Channel %d", (i-1)%12+1), sampleCategories[(i-1)%len(sampleCategories)]
		stats := &youtube.VideoStatistics{ViewCount: uint64(5_000_000 / i), ForceSendFields: []string{"ViewCount", "FavoriteCount"}}
		if i%10 != 0 {
			stats.LikeCount = uint64(200_000 / i)
			stats.ForceSendFields = append(stats.ForceSendFields, "LikeCount")
		}
		if i%7 != 0 {
			stats.CommentCount = uint64(20_000 / i)
			stats.ForceSendFields = append(stats.ForceSendFields, "CommentCount")
		}
		var tags []string
		if i%5 != 0 {
			tags = []string{"sample", "synthetic", cat.title}
		}
		videos = append(videos, &youtube.Video{Kind: "youtube#video", Id: id, Statistics: stats,
			Snippet: &youtube.VideoSnippet{
				Title:       fmt.Sprintf("Sample video %d (synthetic)", i),
				Description: fmt.Sprintf("Synthetic sample video %d of the trendfetch YouTube emulator.\nCategory: %s. Not real data.", i, cat.title),
				PublishedAt: base.Add(-time.Duration(i) * 7 * time.Hour).Format(time.RFC3339),
				ChannelId:   SyntheticChannelID(ch), ChannelTitle: ch, CategoryId: cat.id, Tags: tags, LiveBroadcastContent: "none",
				Thumbnails: &youtube.ThumbnailDetails{
					Default: &youtube.Thumbnail{Url: "https://i.ytimg.com/vi/" + id + "/default.jpg", Width: 120, Height: 90}},
			},
			ContentDetails: &youtube.VideoContentDetails{Duration: fmt.Sprintf("PT%dM%dS", 1+i%14, (i*17)%60), Dimension: "2d", Definition: "hd", Caption: "false"},
		})
	}
	return videos
}

// SampleCategories returns a youtube#videoCategoryListResponse of the categories Sample uses,
// for SetCategories: YouTube's real ids and titles, etags computed by the emulator.
func SampleCategories() []byte {
	resp := youtube.VideoCategoryListResponse{Kind: "youtube#videoCategoryListResponse"}
	for _, c := range sampleCategories {
		item := &youtube.VideoCategory{Kind: "youtube#videoCategory", Id: c.id, Snippet: &youtube.VideoCategorySnippet{
			Title: c.title, Assignable: true, ChannelId: "UCBR8-60-B28hp2BmDPdntcQ", ForceSendFields: []string{"Assignable"}}}
		b, _ := json.Marshal(item)
		item.Etag = etagOf(b)
		resp.Items = append(resp.Items, item)
	}
	b, _ := json.Marshal(&resp)
	resp.Etag = etagOf(b)
	b, _ = json.Marshal(&resp)
	return b
}
