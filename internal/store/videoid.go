package store

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/trendfetch/trendfetch/internal/termtext"
)

var videoIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{11}$`)

// IsVideoID reports whether s has the form of a YouTube video id: 11 characters of A-Z a-z 0-9 _ -.
func IsVideoID(s string) bool { return videoIDRE.MatchString(s) }

// ParseVideoID returns the video id of s: an id, or the id in a YouTube link (watch?v=, youtu.be/,
// /shorts/, /live/, /embed/, /v/ on any host of youtube.com, youtube-nocookie.com or youtu.be,
// scheme optional). Errors name what is wrong with s and the forms wanted.
func ParseVideoID(s string) (string, error) {
	s = strings.TrimSpace(s)
	if IsVideoID(s) {
		return s, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%q is not a video: %s; give its 11-character id (A-Z a-z 0-9 _ -) or a link such as https://www.youtube.com/watch?v=ID, youtu.be/ID, youtube.com/shorts/ID", termtext.Clip(s, 80), why)
	}
	if s == "" {
		return "", bad("empty")
	}
	if !strings.ContainsAny(s, "/.") {
		return "", bad("not an 11-character id")
	}
	raw := s
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", bad("not a URL")
	}
	host := strings.ToLower(u.Hostname())
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	var id string
	switch {
	case host == "youtu.be" || host == "www.youtu.be":
		id = path[0]
	case host == "youtube.com" || strings.HasSuffix(host, ".youtube.com") ||
		host == "youtube-nocookie.com" || strings.HasSuffix(host, ".youtube-nocookie.com"):
		switch {
		case path[0] == "watch":
			id = u.Query().Get("v")
		case len(path) >= 2 && (path[0] == "shorts" || path[0] == "live" || path[0] == "embed" || path[0] == "v"):
			id = path[1]
		default:
			return "", bad("a YouTube link that names no video (want /watch?v=ID, /shorts/ID, /live/ID or /embed/ID)")
		}
	default:
		return "", bad("not a YouTube link")
	}
	if !IsVideoID(id) {
		return "", bad("the link's video id is not 11 characters of A-Z a-z 0-9 _ -")
	}
	return id, nil
}
