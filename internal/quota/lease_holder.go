package quota

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/trendfetch/trendfetch/internal/proc"
)

// The holder of a run lease, stored as JSON, and the rule that makes it
// stale (restic's rule; docs/quota.md, "Run leases").

// leaseHolder identifies the process that holds a run lease: its host, pid,
// boot id, PID namespace and start (clock ticks after boot; "" and 0 when
// unknown), and when it asked (for people only: the wall clock steps).
type leaseHolder struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	BootID     string    `json:"boot_id,omitempty"`
	PIDNS      string    `json:"pid_ns,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	Since      time.Time `json:"since"`
}

// thisHolder returns the stored holder description of this process asking
// for a lease at since.
func thisHolder(since time.Time) string {
	host, _ := os.Hostname()
	h := leaseHolder{Host: cmp.Or(host, "unknown-host"), PID: os.Getpid(), BootID: proc.BootID(), PIDNS: proc.PIDNamespace(),
		StartTicks: proc.StartTicks(os.Getpid()), Since: since.UTC().Truncate(time.Second)}
	b, _ := json.Marshal(h) // cannot fail: strings, integers and a time
	return string(b)
}

// parseHolder decodes a stored holder description; ok is false for one not
// written by thisHolder.
func parseHolder(desc string) (h leaseHolder, ok bool) {
	if json.Unmarshal([]byte(desc), &h) != nil || h.Host == "" || h.PID <= 0 {
		return leaseHolder{}, false
	}
	return h, true
}

// describeHolder is a stored holder description for people, e.g.
// "host-a pid 123 since 2026-11-23T07:00:00Z" (other descriptions as they are).
func describeHolder(desc string) string {
	h, ok := parseHolder(desc)
	if !ok {
		return desc
	}
	return fmt.Sprintf("%s pid %d since %s", h.Host, h.PID, h.Since.UTC().Format(time.RFC3339))
}

// staleHolder is the stale rule: desc names a process of this host, boot and
// PID namespace, not this one, that is gone (proc.Gone). Anything it cannot
// tell is not stale.
func staleHolder(desc string) bool {
	h, ok := parseHolder(desc)
	if !ok {
		return false
	}
	host, _ := os.Hostname()
	boot, ns := proc.BootID(), proc.PIDNamespace()
	if h.Host != host || h.BootID == "" || h.BootID != boot || h.PIDNS == "" || h.PIDNS != ns || h.PID == os.Getpid() {
		return false
	}
	return proc.Gone(h.PID, h.StartTicks)
}
