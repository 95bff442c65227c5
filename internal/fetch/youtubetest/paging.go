package youtubetest

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// pageToken encodes an offset the way the real API's tokens look: a protobuf with field 1 the
// offset and field 2 the direction (0 forward, 1 backward), base64url without padding.
// Offset 50 forward is "CDIQAA", offset 5 backward is "CAUQAQ", as in the recorded responses.
func pageToken(offset int, backward bool) string {
	b := binary.AppendUvarint([]byte{0x08}, uint64(offset))
	dir := byte(0)
	if backward {
		dir = 1
	}
	return base64.RawURLEncoding.EncodeToString(append(b, 0x10, dir))
}

// parsePageToken is the inverse of pageToken; ok is false for anything else.
func parsePageToken(tok string) (offset int, backward bool, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(tok, "="))
	if err != nil || len(b) < 4 || b[0] != 0x08 {
		return 0, false, false
	}
	v, n := binary.Uvarint(b[1:])
	if n <= 0 || v > 1<<20 {
		return 0, false, false
	}
	rest := b[1+n:]
	if len(rest) != 2 || rest[0] != 0x10 || rest[1] > 1 {
		return 0, false, false
	}
	return int(v), rest[1] == 1, true
}
