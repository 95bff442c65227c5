package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"

	"google.golang.org/api/youtube/v3"

	"github.com/trendfetch/trendfetch/internal/store"
)

// Omitted counts. The API leaves a count out of a video's statistics when
// it is hidden: likeCount when the owner hid the ratings, commentCount when
// comments are disabled (docs/design.md §3; the public datasets mark such rows
// ratings_disabled / comments_disabled). The Go client decodes an absent
// count as 0, indistinguishable from a true 0, so the call sites that read
// statistics (videos.list, videos.batchGetStats) keep a copy of the raw
// response body (rawBody, filled by capBody's transport) and look up which
// counts were given (givenCounts); an omitted count is stored as NULL.

// rawBodyKey is the context key of the buffer capBody copies a response
// body into.
type rawBodyKey struct{}

// withRawBody returns ctx whose API response bodies are appended to buf as
// the client reads them (decompressed: the transport undoes gzip first).
// The caller resets buf before each attempt.
func withRawBody(ctx context.Context, buf *bytes.Buffer) context.Context {
	return context.WithValue(ctx, rawBodyKey{}, buf)
}

// callGiven sends a call whose answer carries statistics (see call), and
// returns with it which counts each video's statistics gave (givenCounts).
func callGiven[T any](ctx context.Context, r *Runner, st *runState, method string, do func(context.Context) (T, error)) (T, map[string]given, error) {
	var raw bytes.Buffer
	resp, err := call(ctx, r, st, method, func(ctx context.Context) (T, error) {
		raw.Reset()
		return do(withRawBody(ctx, &raw))
	})
	if err != nil {
		return resp, nil, err
	}
	counts, err := givenCounts(raw.Bytes())
	return resp, counts, err
}

// given says which statistics counts the API sent for one video.
type given struct{ views, likes, comments bool }

// givenCounts maps video id to the counts its statistics carried, from a
// raw videos.list or videos.batchGetStats response body. A video without a
// statistics object is absent. Errors: the body is not such a JSON object
// (the client, which decoded it already, would have failed first).
func givenCounts(body []byte) (map[string]given, error) {
	var doc struct {
		Items []struct {
			ID         string `json:"id"`
			Statistics *struct {
				ViewCount    json.RawMessage `json:"viewCount"`
				LikeCount    json.RawMessage `json:"likeCount"`
				CommentCount json.RawMessage `json:"commentCount"`
			} `json:"statistics"`
		} `json:"items"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("cannot read which statistics the response gave: %w", err)
	}
	out := make(map[string]given, len(doc.Items))
	for _, it := range doc.Items {
		if s := it.Statistics; s != nil {
			out[it.ID] = given{views: present(s.ViewCount), likes: present(s.LikeCount), comments: present(s.CommentCount)}
		}
	}
	return out, nil
}

// present reports whether a JSON value was given and is not null.
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// clearOmitted sets the counts of v the API did not give to nil (unknown).
// A video absent from g (no statistics object) is left as converted.
func clearOmitted(g map[string]given, id string, views, likes, comments **int64) {
	c, ok := g[id]
	if !ok {
		return
	}
	if !c.views {
		*views = nil
	}
	if !c.likes {
		*likes = nil
	}
	if !c.comments {
		*comments = nil
	}
}

// videoWithGiven is ConvertVideo of it with omitted counts as nil. A count
// too large for an int64 is nil as well (ConvertVideo), with a warning.
func (st *runState) videoWithGiven(g map[string]given, it *youtube.Video) store.Video {
	v := ConvertVideo(it)
	if s := it.Statistics; s != nil {
		for _, c := range []struct {
			name string
			n    uint64
		}{{"viewCount", s.ViewCount}, {"likeCount", s.LikeCount}, {"commentCount", s.CommentCount}} {
			if c.n > math.MaxInt64 {
				st.log.Warn().Str("video", v.ID).Str("field", c.name).Uint64("value", c.n).Msg("count too large for the store: kept as unknown")
			}
		}
	}
	clearOmitted(g, v.ID, &v.Views, &v.Likes, &v.Comments)
	return v
}
