package quota

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/trendfetch/trendfetch/internal/proc"
)

// The holder of a run lease and the rule that makes it stale, in one place
// (restic's rule: a lock whose holder is a process of this host that no
// longer exists is stale and taken over at once; others expire with their
// TTL). The holder is stored as JSON; a pid means something only within one
// boot and one PID namespace, so a holder from another host, boot or
// namespace (another container) is never stale here. Within them the holder
// is its pid and its start in clock ticks after boot, which no step of the
// wall clock changes: a live holder is never taken for a gone one.

// leaseHolder identifies the process that holds a run lease.
type leaseHolder struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// BootID is /proc/sys/kernel/random/boot_id ("" when unknown).
	BootID string `json:"boot_id,omitempty"`
	// PIDNS is the holder's PID namespace, readlink /proc/self/ns/pid
	// ("" when unknown).
	PIDNS string `json:"pid_ns,omitempty"`
	// StartTicks is when the holder process started, clock ticks after
	// boot (proc.StartTicks; 0 when unknown): with the pid, the boot and
	// the namespace it names the process, so a reused pid is not it.
	StartTicks uint64 `json:"start_ticks,omitempty"`
	// Since is when the lease was asked for (whole seconds, UTC), for
	// people only: the stale rule never reads it (the wall clock steps).
	Since time.Time `json:"since"`
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
// written by thisHolder (a test's, an older release's).
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

// staleHolder is the stale rule: desc names a process of this host, this
// boot and this PID namespace, not this process, that is gone (no such pid,
// a zombie, or a pid reused by a process that started at another tick than
// the recorded StartTicks: proc.Gone). Anything it cannot tell is not
// stale; a holder without StartTicks is gone only when its pid is.
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
