package proc

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process inspection is Linux-only; elsewhere Gone is always false")
	}
	self := os.Getpid()
	if Gone(self, time.Now()) {
		t.Error("this live process, which started before now, is reported gone")
	}
	if !Gone(self, time.Now().Add(-24*time.Hour*365*30)) {
		t.Error("a lock taken long before this process started: its holder (an earlier process with this pid) is not reported gone")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !Gone(cmd.Process.Pid, time.Now()) {
		t.Errorf("exited pid %d not reported gone", cmd.Process.Pid)
	}
	if Gone(0, time.Now()) || Gone(-1, time.Now()) {
		t.Error("pid <= 0 reported gone")
	}
}
