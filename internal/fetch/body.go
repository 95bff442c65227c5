package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/store"
)

// MaxResponseBytes caps one API response body (8 MiB; a page of 50 videos is
// about 100 KB): a longer one is refused (ErrResponseTooLarge), never read whole.
const MaxResponseBytes = 8 << 20

// ErrResponseTooLarge is the read error of a body longer than MaxResponseBytes.
var ErrResponseTooLarge = errors.New("response body too large")

// capBody is an http.RoundTripper capping response bodies (MaxResponseBytes)
// and copying them into the buffer of rawBodyKey when the context has one.
type capBody struct{ base http.RoundTripper }

func (c capBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > MaxResponseBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d MiB", ErrResponseTooLarge, resp.ContentLength, MaxResponseBytes>>20)
	}
	body := cappedBody{http.MaxBytesReader(nil, resp.Body, MaxResponseBytes)}
	resp.Body = body
	if buf, ok := req.Context().Value(rawBodyKey{}).(*bytes.Buffer); ok {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(body, buf), body}
	}
	return resp, nil
}

// cappedBody reads an http.MaxBytesReader, its error ErrResponseTooLarge.
type cappedBody struct{ io.ReadCloser }

func (b cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		err = fmt.Errorf("%w: more than %d MiB", ErrResponseTooLarge, MaxResponseBytes>>20)
	}
	return n, err
}

// rawBodyKey is the context key of a *bytes.Buffer capBody copies a response body into
// (decompressed): the client decodes an omitted count as 0, givenCounts finds them (docs/design.md §3).
type rawBodyKey struct{}

// callGiven is call for an answer carrying statistics, returned with which
// counts each video's statistics gave.
func callGiven[C apiCall[T], T any](ctx context.Context, r *Runner, st *runState, method string, req func(context.Context) C) (T, map[string]given, error) {
	var raw bytes.Buffer
	resp, err := call(ctx, r, st, method, func(ctx context.Context) C {
		raw.Reset()
		return req(context.WithValue(ctx, rawBodyKey{}, &raw))
	})
	if err != nil {
		return resp, nil, err
	}
	counts, err := givenCounts(raw.Bytes())
	return resp, counts, err
}

// given says which statistics counts (views, likes, comments) the API sent for one video.
type given [3]bool

// givenCounts maps video id to the counts its statistics carried, from a raw
// videos.list or videos.batchGetStats body (without statistics: absent).
func givenCounts(body []byte) (map[string]given, error) {
	var doc struct {
		Items []struct {
			ID         string
			Statistics *struct{ ViewCount, LikeCount, CommentCount *json.RawMessage } // null or absent: nil
		}
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("cannot read which statistics the response gave: %w", err)
	}
	out := make(map[string]given, len(doc.Items))
	for _, it := range doc.Items {
		if s := it.Statistics; s != nil {
			out[it.ID] = given{s.ViewCount != nil, s.LikeCount != nil, s.CommentCount != nil}
		}
	}
	return out, nil
}

// clearOmitted sets the counts (views, likes, comments) of video id the API
// did not give to nil; a video absent from g is left as it is.
func clearOmitted(g map[string]given, id string, counts ...**int64) {
	if c, ok := g[id]; ok {
		for i, p := range counts {
			if !c[i] {
				*p = nil
			}
		}
	}
}

// fetched maps items (nil and id-less ones skipped) with video and adds them
// to the run's videos and their channels to channelOrder.
func (st *runState) fetched(g map[string]given, items []*youtube.Video) []store.Video {
	out := make([]store.Video, 0, len(items))
	for _, it := range items {
		if it != nil && it.Id != "" {
			v := st.video(g, it)
			st.videos[v.ID] = v
			if v.ChannelID != "" && !slices.Contains(st.channelOrder, v.ChannelID) {
				st.channelOrder = append(st.channelOrder, v.ChannelID)
			}
			out = append(out, v)
		}
	}
	return out
}

// video maps an API video to the stored shape, its counts omitted (per g) or
// too large for an int64 nil, the latter with a warning.
func (st *runState) video(g map[string]given, it *youtube.Video) store.Video {
	v := store.Video{ID: it.Id}
	if s := it.Snippet; s != nil {
		v.Title, v.Description, v.ChannelID, v.ChannelTitle = s.Title, s.Description, s.ChannelId, s.ChannelTitle
		v.CategoryID, v.Tags = s.CategoryId, s.Tags
		v.PublishedAt, _ = time.Parse(time.RFC3339, s.PublishedAt) // zero when unparsable
		if s.Thumbnails != nil && s.Thumbnails.Default != nil {
			v.ThumbnailURL = s.Thumbnails.Default.Url
		}
	}
	if cd := it.ContentDetails; cd != nil {
		v.Duration = cd.Duration
	}
	if s := it.Statistics; s != nil {
		v.Views, v.Likes, v.Comments = i64(s.ViewCount), i64(s.LikeCount), i64(s.CommentCount)
		for i, n := range []uint64{s.ViewCount, s.LikeCount, s.CommentCount} { // fixed order: deterministic logs
			if n > math.MaxInt64 {
				st.log.Warn().Str("video", v.ID).Str("field", [...]string{"viewCount", "likeCount", "commentCount"}[i]).
					Uint64("value", n).Msg("count too large for the store: kept as unknown")
			}
		}
	}
	clearOmitted(g, v.ID, &v.Views, &v.Likes, &v.Comments)
	return v
}
