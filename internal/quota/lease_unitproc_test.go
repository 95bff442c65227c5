package quota

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/proc"
)

// TestTakeoverUnderTheUnitsProc: in a mount and PID namespace whose /proc is mounted with the
// options the shipped trendfetch.service gives its processes (ProtectProc=, ProcSubset=), the
// lease of a run killed under the same unit is taken over at once. The same probe under
// ProcSubset=pid (/proc/sys hidden: no boot id) keeps the region held until the lease's TTL:
// why the shipped unit does not set it.
func TestTakeoverUnderTheUnitsProc(t *testing.T) {
	if os.Getenv("TF_TAKEOVER_PROBE") != "" {
		takeoverProbe(t)
		return
	}
	if err := exec.Command("unshare", "-mpf", "--mount-proc", "true").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mounting /proc as the unit sees it needs unshare(1) and root in CI (CI=true): %v", err)
		}
		t.Skip("cannot mount /proc in a namespace of its own:", err)
	}
	shipped := shippedProcOptions(t)
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{shipped, "taken over"},
		{append(shipped, "subset=pid"), "held"},
	} {
		mount := "umount /proc && mount -t proc -o " + strings.Join(append(tc.opts, "rw"), ",") + ` proc /proc && exec "$0" -test.run='^TestTakeoverUnderTheUnitsProc$' -test.count=1 -test.v`
		cmd := exec.Command("unshare", "-mpf", "--mount-proc", "sh", "-c", mount, os.Args[0])
		cmd.Env = append(os.Environ(), "TF_TAKEOVER_PROBE=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "probe: "+tc.want+"\n") {
			t.Errorf("/proc mounted with %v: %v: want %q\n%s", tc.opts, err, tc.want, out)
		}
	}
}

// shippedProcOptions is the proc(5) mount options of configs/trendfetch.service's ProtectProc=
// and ProcSubset= (systemd.exec(5)).
func shippedProcOptions(t *testing.T) []string {
	data, err := os.ReadFile("../../configs/trendfetch.service")
	if err != nil {
		t.Fatal(err)
	}
	var opts []string
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "ProtectProc="); ok {
			opts = append(opts, "hidepid="+v)
		}
		if v, ok := strings.CutPrefix(line, "ProcSubset="); ok {
			opts = append(opts, "subset="+v)
		}
	}
	return opts
}

// takeoverProbe plants the lease of a run of this host, boot and namespace that has exited (as
// it was recorded under the same /proc), asks for the region and prints "probe: taken over"
// or "probe: held".
func takeoverProbe(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	raw, _ := json.Marshal(leaseHolder{Host: host, PID: dead.Process.Pid, BootID: proc.BootID(), PIDNS: proc.PIDNamespace(), Since: time.Now()})
	b := newTestSQLite(t)
	if ok, _, _, err := b.TryLock(testCtx(t), leaseID{"c", "US"}, "planted "+string(raw), time.Hour); err != nil || !ok {
		t.Fatalf("planting: %v %v", ok, err)
	}
	l, err := leaseLimiter(t, b).AcquireLease(testCtx(t), "c", "US", time.Minute, "")
	var held *LeaseHeldError
	switch {
	case err == nil:
		defer l.Release(testCtx(t))
		t.Log("probe: taken over")
	case errors.As(err, &held):
		t.Log("probe: held")
	default:
		t.Fatal(err)
	}
}
