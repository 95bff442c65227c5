package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/store"
)

// TestReadOnlyCommandsCreateNothing: on a fresh host (no database, no quota
// database) the read-only commands create no file or directory, also beside
// a --database path that does not exist. quota status and lease list print
// an empty result with a note and exit 0; the commands that read the
// database say there is none yet and exit 4 (issue 40 item 15).
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	e := newEnv(t)
	missing := filepath.Join(e.dir, "nowhere", "x.db")
	for _, args := range [][]string{
		{"runs"}, {"runs", "--json"}, {"search", "cats"}, {"search", "cats", "--json"},
		{"quota", "status"}, {"quota", "status", "--json"}, {"lease", "list"}, {"lease", "list", "--json"},
		{"--database", missing, "quota", "status"}, {"--database", missing, "runs"},
	} {
		res := e.run(args...)
		want, note := 0, "note: no "
		if a := strings.Join(args, " "); strings.Contains(a, "runs") || strings.Contains(a, "search") {
			want, note = 4, "yet: nothing recorded"
		}
		if res.code != want || !strings.Contains(res.stderr, note) {
			t.Errorf("%v: exit %d, want %d and %q\n%s", args, res.code, want, note, res.stderr)
		}
		if want == 0 && strings.Contains(strings.Join(args, " "), "--json") && !strings.HasPrefix(strings.TrimSpace(res.stdout), "[") && !strings.HasPrefix(strings.TrimSpace(res.stdout), "{") {
			t.Errorf("%v: stdout is not JSON: %q", args, res.stdout)
		}
	}
	for _, dir := range []string{filepath.Join(e.dir, "data"), filepath.Join(e.dir, ".local"), filepath.Join(e.dir, "nowhere")} {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("a read-only command created %s", dir)
		}
	}
}

// TestExampleConfigWorksAsDocumented copies configs/trendfetch.example.yaml
// and sets `cron: "@hourly"` as its comment invites: it must load.
func TestExampleConfigWorksAsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "trendfetch.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	text := strings.Replace(string(raw), `  cron: ""`, `  cron: "@hourly"`, 1)
	if text == string(raw) {
		t.Fatal(`the example has no line   cron: ""`)
	}
	cfg := e.writeConfig(text)
	res := e.run("--config", cfg, "regions")
	if res.code != 0 || !strings.Contains(res.stdout, "@hourly") {
		t.Errorf("example with cron @hourly: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = e.run("--config", e.writeConfig(string(raw)), "regions")
	if res.code != 0 {
		t.Errorf("example as shipped: exit %d\n%s", res.code, res.stderr)
	}
}

// TestReaderAsServiceUser runs the read commands as user nobody (the
// service user of `serve`) against a database whose directory only its
// writer (root) can write, the normal cron/serve split:
//
//   - while a writer stores charts, every read exits 0 with the newest
//     complete chart committed before it started (never stale, never
//     "database disk image is malformed");
//   - with no writer (its -wal and -shm gone), the reader cannot get a WAL
//     index: it refuses with one line saying what it needs, exit 2;
//   - with the directory group-writable for the reader, it reads.
func TestReaderAsServiceUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the reader as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)

	// A tree nobody can read but not write: root, 0755.
	top, err := os.MkdirTemp("", "trendfetch-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dataDir := filepath.Join(top, "data")
	bin := filepath.Join(top, "trendfetch")
	for _, err := range []error{os.Chmod(top, 0o755), os.Mkdir(dataDir, 0o755), copyExec(binary, bin)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dataDir, "trendfetch.db")
	read := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--database", db}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + top, "XDG_CONFIG_HOME=" + filepath.Join(top, "config"),
			"XDG_DATA_HOME=" + top, "TRENDFETCH_LOG_FORMAT=json"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running trendfetch as nobody: %v", err)
		}
		return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	}

	ctx := context.Background()
	w, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	videos := make([]store.Video, 200)
	for i := range videos {
		videos[i] = store.Video{ID: fmt.Sprintf("vid%08d", i), Title: fmt.Sprintf("kakapo number %d", i), ChannelTitle: "Birds"}
	}
	var latest atomic.Int64 // id of the newest complete capture, once committed
	capture := func() {
		run, err := w.StartRun(ctx, store.Run{Region: "US"})
		if err != nil {
			t.Error(err)
			return
		}
		at := time.Now()
		for p := 0; p < 4; p++ {
			if err := w.SaveSnapshot(ctx, store.Snapshot{RunID: run, Region: "US", FirstRank: p*50 + 1, Videos: videos[p*50 : p*50+50], At: at}); err != nil {
				t.Error(err)
				return
			}
		}
		if err := w.CompleteCapture(ctx, run, "US", store.KindChart, "", at); err != nil {
			t.Error(err)
		}
		c, _, err := w.CaptureAt(ctx, store.CaptureQuery{Region: "US", RunID: run})
		if err != nil {
			t.Error(err)
		}
		latest.Store(c.ID)
	}
	capture()
	stop, writer := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writer)
		for {
			select {
			case <-stop:
				return
			default:
				capture()
			}
		}
	}()
	for i := range 12 {
		before := latest.Load()
		res := read("chart", "--region", "US", "--json")
		var out struct {
			Capture store.Capture
			Entries []store.Entry
		}
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &out) != nil {
			t.Fatalf("read %d while the writer writes: exit %d\n%s", i, res.code, res.stderr)
		}
		if out.Capture.ID < before || !out.Capture.Complete || len(out.Entries) != 200 {
			t.Fatalf("read %d: capture %d (complete %v, %d entries); capture %d was committed before it started",
				i, out.Capture.ID, out.Capture.Complete, len(out.Entries), before)
		}
		if res := read("search", "kakapo", "--limit", "5"); res.code != 0 || strings.Count(res.stdout, "youtu.be/") != 5 {
			t.Fatalf("search %d while the writer writes: exit %d\n%s%s", i, res.code, res.stdout, res.stderr)
		}
	}
	close(stop)
	<-writer
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// No writer: nothing beside the database that nobody could use.
	if m, _ := filepath.Glob(db + "-*"); len(m) != 0 {
		t.Fatalf("the writer left %v", m)
	}
	res := read("chart", "--region", "US")
	if res.code != 2 || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 || !strings.Contains(res.stderr, "writable") {
		t.Errorf("reader without a WAL index: exit %d, want 2 and one line saying what it needs:\n%s", res.code, res.stderr)
	}

	// What the line asks for: the directory group-writable for the reader.
	for _, err := range []error{os.Chown(dataDir, 0, gid), os.Chmod(dataDir, 0o775), os.Chown(db, 0, gid), os.Chmod(db, 0o664)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if res := read("chart", "--region", "US", "--json"); res.code != 0 || !strings.Contains(res.stdout, `"complete": true`) {
		t.Errorf("reader with a group-writable directory: exit %d\n%s", res.code, res.stderr)
	}
}

// copyExec copies the executable src to dst (mode 0755).
func copyExec(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// TestDatabaseNotARegularFile: --database /dev/null (or a directory) is
// refused with one line and exit 2, by read and write commands alike, and
// nothing is created beside it (it used to create /dev/null-journal).
func TestDatabaseNotARegularFile(t *testing.T) {
	e := newEnv(t)
	e.vars["YOUTUBE_API_KEY"] = "k"
	_, journalErr := os.Stat("/dev/null-journal")
	for _, db := range []string{os.DevNull, e.dir} {
		for _, args := range [][]string{{"runs"}, {"search", "cats"}, {"chart", "--region", "US"}, {"run", "--region", "US", "--api-endpoint", "http://127.0.0.1:1"}} {
			res := e.run(append([]string{"--database", db}, args...)...)
			if res.code != 2 || !strings.Contains(res.stderr, "not a regular file") || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
				t.Errorf("--database %s %v: exit %d, want 2 and one line:\n%s", db, args, res.code, res.stderr)
			}
		}
	}
	if _, err := os.Stat("/dev/null-journal"); err == nil && journalErr != nil {
		t.Error("created /dev/null-journal")
	}
}
