package quota

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/proc"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// TestStaleHolderRule plants leases held by processes of this host, of
// another boot, of another PID namespace (a container with the same
// hostname) and of another host, on SQLite and Redis: only a holder of this
// host, boot and namespace whose process is gone (no such pid, a zombie, or
// its pid now held by a process that started at another tick) is taken
// over; the others keep the region (*LeaseHeldError), whatever the wall
// clock did since the lease was taken.
func TestStaleHolderRule(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stale rule needs process inspection (Linux)")
	}
	backends := map[string]func(t *testing.T) Backend{
		"sqlite": func(t *testing.T) Backend { return newTestSQLite(t) },
		"redis":  func(t *testing.T) Backend { return newTestRedis(t, redistest.Start(t)) },
	}
	host, _ := os.Hostname()
	boot, ns := proc.BootID(), proc.PIDNamespace()

	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	zombie := exec.Command("sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	zombie.Process.Kill() // not reaped until the end: state Z
	defer zombie.Wait()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	// h is a holder of this host, boot and namespace: pid started at ticks.
	h := func(pid int, ticks uint64, since time.Time) leaseHolder {
		return leaseHolder{Host: host, PID: pid, BootID: boot, PIDNS: ns, StartTicks: ticks, Since: since}
	}
	liveTicks := proc.StartTicks(live.Process.Pid)
	if liveTicks == 0 {
		t.Fatal("no start ticks for a live child")
	}
	other := func(f func(*leaseHolder)) leaseHolder { x := h(dead.Process.Pid, 0, since); f(&x); return x }

	for _, tc := range []struct {
		name  string
		h     leaseHolder
		stale bool
	}{
		{"this host, gone", h(dead.Process.Pid, 0, since), true},
		{"this host, zombie", h(zombie.Process.Pid, 0, since), true},
		{"this host, alive", h(live.Process.Pid, liveTicks, since), false},
		// Issue 31 item 2: after the wall clock stepped forward an hour, the
		// lease reads as taken an hour before its holder started (a start
		// derived from btime moves with the clock); its holder is the same
		// live process all the same.
		{"this host, alive, wall clock stepped", h(live.Process.Pid, liveTicks, since.Add(-time.Hour)), false},
		{"this host, alive, no start recorded", h(live.Process.Pid, 0, since.Add(-time.Hour)), false},
		{"this host, pid reused", h(live.Process.Pid, liveTicks-1, since), true},
		{"another PID namespace", other(func(x *leaseHolder) { x.PIDNS = "pid:[1]" }), false},
		{"another boot", other(func(x *leaseHolder) { x.BootID = "00000000-0000-0000-0000-000000000000" }), false},
		{"another host", other(func(x *leaseHolder) { x.Host = "other-" + host }), false},
		{"no namespace recorded", other(func(x *leaseHolder) { x.PIDNS = "" }), false},
	} {
		for name, open := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				b := open(t)
				raw, _ := json.Marshal(tc.h)
				locker := b.(leaseLocker)
				if ok, _, _, err := locker.TryLock(testCtx(t), leaseID{"c", "US"}, "planted "+string(raw), time.Hour); err != nil || !ok {
					t.Fatalf("planting: %v %v", ok, err)
				}
				l, err := leaseLimiter(t, b).AcquireLease(testCtx(t), "c", "US", time.Minute, "")
				var held *LeaseHeldError
				switch {
				case tc.stale && err != nil:
					t.Fatalf("stale holder %s not taken over: %v", raw, err)
				case tc.stale:
					defer l.Release(testCtx(t))
					if want := host + " pid " + strconv.Itoa(tc.h.PID) + " since "; !strings.HasPrefix(l.TookOver(), want) {
						t.Errorf("TookOver() = %q, want %q...", l.TookOver(), want)
					}
				case !errors.As(err, &held):
					t.Fatalf("holder %s was taken over (%v); want *LeaseHeldError", raw, err)
				case !strings.Contains(held.Holder, " pid "+strconv.Itoa(tc.h.PID)+" since "):
					t.Errorf("held by %q: want a description, not the stored JSON", held.Holder)
				}
			})
		}
	}
}
