package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestAPIKeyFromASystemdCredential: with no key in the environment or a
// file, the key is read from $CREDENTIALS_DIRECTORY (LoadCredential=) and
// never printed.
func TestAPIKeyFromASystemdCredential(t *testing.T) {
	emu, url, e := sampleEnv(t, "US")
	delete(e.vars, "YOUTUBE_API_KEY")
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "youtube-api-key-default"), []byte("systemd-cred-key\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	e.vars["CREDENTIALS_DIRECTORY"] = creds
	e.vars["TRENDFETCH_LOG_LEVEL"] = "trace"
	res := e.run("--api-endpoint", url, "run", "--region", "US")
	if res.code != 0 || emu.Units("systemd-cred-key") == 0 {
		t.Fatalf("run: exit %d, emulator saw %d units with the credential's key\n%s", res.code, emu.Units("systemd-cred-key"), res.stderr)
	}
	if strings.Contains(res.stderr+res.stdout, "systemd-cred-key") {
		t.Errorf("the key reached the output:\n%s", res.stderr)
	}
	delete(e.vars, "CREDENTIALS_DIRECTORY")
	if res = e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 2 || !strings.Contains(res.stderr, "systemd credential youtube-api-key-default") {
		t.Errorf("no key anywhere: exit %d, want 2 naming the credential\n%s", res.code, res.stderr)
	}
}

// notifySocket listens on a real unixgram socket as systemd does and
// returns its path and the datagrams received so far.
func notifySocket(t *testing.T) (string, func() []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var (
		mu  sync.Mutex
		got []string
	)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, string(buf[:n]))
			mu.Unlock()
		}
	}()
	return path, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestScheduleAndServeNotifySystemd: under Type=notify with WatchdogSec,
// schedule and serve send READY=1, then WATCHDOG=1 pings, then STOPPING=1
// on SIGTERM, to $NOTIFY_SOCKET.
func TestScheduleAndServeNotifySystemd(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	if res := e.run("--api-endpoint", url, "run", "--region", "US"); res.code != 0 {
		t.Fatalf("run: exit %d\n%s", res.code, res.stderr)
	}
	cfg := e.writeConfig("regions: [US]\nschedule:\n  cron: \"0 0 1 1 *\"\n")
	for _, args := range [][]string{{"--config", cfg, "--api-endpoint", url, "schedule"}, {"serve", "--addr", "127.0.0.1:0"}} {
		t.Run(args[len(args)-1], func(t *testing.T) {
			sock, got := notifySocket(t)
			e.vars["NOTIFY_SOCKET"] = sock
			e.vars["WATCHDOG_USEC"] = "100000" // a ping every 50ms
			defer delete(e.vars, "NOTIFY_SOCKET")
			defer delete(e.vars, "WATCHDOG_USEC")
			d := e.start(args...)
			d.waitFor("READY=1 and two watchdog pings", func() bool {
				msgs := strings.Join(got(), "\n")
				return strings.HasPrefix(msgs, "READY=1") && strings.Count(msgs, "WATCHDOG=1") >= 2
			})
			if code := d.stop(syscall.SIGTERM); code != 0 {
				t.Errorf("exit %d after SIGTERM\n%s", code, d.stderr.String())
			}
			// The socket is read in the background: the last datagram may
			// be read a moment after the process exits.
			msgs := got()
			for deadline := time.Now().Add(2 * time.Second); (len(msgs) == 0 || msgs[len(msgs)-1] != "STOPPING=1") && time.Now().Before(deadline); msgs = got() {
				time.Sleep(10 * time.Millisecond)
			}
			if len(msgs) == 0 || msgs[len(msgs)-1] != "STOPPING=1" {
				t.Errorf("notifications %q, want STOPPING=1 last", msgs)
			}
		})
	}
}
