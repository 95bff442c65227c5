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
// host, boot and namespace whose process is gone (no such pid, or a zombie)
// is taken over; the others keep the region (*LeaseHeldError).
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
	since := time.Now() // each lease was taken after its process started

	for _, tc := range []struct {
		name  string
		h     leaseHolder
		stale bool
	}{
		{"this host, gone", leaseHolder{host, dead.Process.Pid, boot, ns, since}, true},
		{"this host, zombie", leaseHolder{host, zombie.Process.Pid, boot, ns, since}, true},
		{"this host, alive", leaseHolder{host, live.Process.Pid, boot, ns, since}, false},
		{"another PID namespace", leaseHolder{host, dead.Process.Pid, boot, "pid:[1]", since}, false},
		{"another boot", leaseHolder{host, dead.Process.Pid, "00000000-0000-0000-0000-000000000000", ns, since}, false},
		{"another host", leaseHolder{"other-" + host, dead.Process.Pid, boot, ns, since}, false},
		{"no namespace recorded", leaseHolder{host, dead.Process.Pid, boot, "", since}, false},
	} {
		for name, open := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				b := open(t)
				raw, _ := json.Marshal(tc.h)
				locker := b.(leaseLocker)
				if ok, _, _, err := locker.TryLock(testCtx(t), leaseName("c", "US"), "planted "+string(raw), time.Hour); err != nil || !ok {
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
