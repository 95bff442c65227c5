package serve

import (
	"net"
	"strings"
)

// IsLoopbackHost reports whether host (no port) names only the loopback
// interface: localhost, a name under .localhost (RFC 6761), or a loopback
// IP address.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
