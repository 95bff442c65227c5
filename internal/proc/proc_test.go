package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process inspection is Linux-only; elsewhere Gone is always false")
	}
	self := os.Getpid()
	ticks := StartTicks(self)
	if ticks == 0 || ticks != StartTicks(self) {
		t.Fatalf("StartTicks(self) = %d, then %d: want the same non-zero tick", ticks, StartTicks(self))
	}
	if Gone(self, ticks) || Gone(self, 0) {
		t.Error("this live process is reported gone")
	}
	if !Gone(self, ticks-1) {
		t.Error("a holder that started at another tick (an earlier process with this pid) is not reported gone")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !Gone(cmd.Process.Pid, 0) {
		t.Errorf("exited pid %d not reported gone", cmd.Process.Pid)
	}
	if StartTicks(cmd.Process.Pid) != 0 {
		t.Errorf("exited pid %d has start ticks", cmd.Process.Pid)
	}
	if Gone(0, 0) || Gone(-1, 0) {
		t.Error("pid <= 0 reported gone")
	}
}

// TestZombieIsGone: a child killed but not yet reaped (state Z) is gone,
// not alive: its lease can be taken over at once.
func TestZombieIsGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process inspection is Linux-only")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ticks := StartTicks(cmd.Process.Pid)
	if Gone(cmd.Process.Pid, ticks) {
		t.Fatal("a running child is reported gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// Not reaped: wait until the kernel shows the zombie.
	stat := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		raw, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never became a zombie: %s", raw)
		}
	}
	if !Gone(cmd.Process.Pid, ticks) {
		t.Error("a killed, unreaped child (zombie) is reported alive")
	}
}

// TestIdentity: this host's boot id and this process's PID namespace are
// known on Linux, and stable.
func TestIdentity(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux-only")
	}
	if b := BootID(); len(b) != 36 || b != BootID() {
		t.Errorf("BootID() = %q, want a stable UUID", b)
	}
	if ns := PIDNamespace(); !strings.HasPrefix(ns, "pid:[") {
		t.Errorf("PIDNamespace() = %q, want pid:[inode]", ns)
	}
}
