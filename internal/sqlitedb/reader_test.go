package sqlitedb

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

var readerSchema = fstest.MapFS{"0001_t.sql": file("CREATE TABLE t (i INTEGER PRIMARY KEY, pad TEXT NOT NULL)")}

// TestReaderWhileWritersWrite runs a long-lived reader as user nobody (a
// service user that cannot write the database directory) while writers
// come and go: each writer opens the database, commits rows one
// transaction at a time and closes it, as cron runs do. The reader starts
// while a writer has the database open and must see every commit in
// order, with no error, until the end: rows 1..n, never fewer than it saw
// before, never a torn or stale snapshot.
func TestReaderWhileWritersWrite(t *testing.T) {
	if os.Getenv("SQLITEDB_READER") != "" {
		t.Skip("helper")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the reader as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	top, err := os.MkdirTemp("", "sqlitedb-reader-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	bin := filepath.Join(top, "test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "data")
	for _, err := range []error{os.Chmod(top, 0o755), os.WriteFile(bin, self, 0o755), os.Mkdir(dir, 0o755)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "r.db")
	ctx := context.Background()
	open := func(n int) *writer {
		db, err := Open(ctx, path, Options{Migrations: readerSchema})
		if err != nil {
			t.Fatal(err)
		}
		return &writer{t: t, db: db, n: n}
	}
	w := open(0)
	w.insert(10)

	done := filepath.Join(top, "done")
	// start runs a reader as nobody and waits until it has opened the
	// database (or refused to); its report is the rest of its output.
	start := func() (*exec.Cmd, *bufio.Scanner, string) {
		cmd := exec.Command(bin, "-test.run=^TestReaderHelper$", "-test.count=1", "-test.v")
		cmd.Env = []string{"SQLITEDB_READER=" + path, "SQLITEDB_DONE=" + done}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Stderr = cmd.Stdout
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "opened") || strings.HasPrefix(l, "refused") {
				return cmd, sc, l
			}
		}
		cmd.Wait()
		t.Fatal("reader exited before opening the database")
		return nil, nil, ""
	}
	// B: starts while no process has the database open (its -wal and -shm
	// are gone): must refuse, or read correctly; never read a stale or
	// torn file.
	w.db.Close()
	if m, _ := filepath.Glob(path + "-*"); len(m) != 0 {
		t.Fatalf("the writer left %v", m)
	}
	b, bOut, bOpen := start()
	// A: starts while a writer has the database open: must read.
	w = open(w.n)
	w.insert(1)
	a, aOut, aOpen := start()
	t.Logf("reader B: %s", bOpen)
	if aOpen != "opened" || !strings.Contains(bOpen, "refused") && bOpen != "opened" {
		t.Errorf("reader A: %q, reader B: %q", aOpen, bOpen)
	}
	// Writers come and go while the readers read.
	for range 6 {
		w.insert(40)
		w.db.Close()
		time.Sleep(20 * time.Millisecond)
		w = open(w.n)
	}
	w.insert(40)
	if err := os.WriteFile(done, []byte(strconv.Itoa(w.n)), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]struct {
		cmd *exec.Cmd
		out *bufio.Scanner
	}{"A": {a, aOut}, "B": {b, bOut}} {
		var rest []string
		for r.out.Scan() {
			rest = append(rest, r.out.Text())
		}
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("reader %s as nobody: %v\n%s", name, err, strings.Join(rest, "\n"))
		} else {
			t.Logf("reader %s: %s", name, strings.Join(rest, " | "))
		}
	}
	w.db.Close()
}

// writer commits rows 1, 2, ... one transaction each, with 4 KiB of
// padding so that the WAL grows and checkpoints run.
type writer struct {
	t  *testing.T
	db *sql.DB
	n  int
}

func (w *writer) insert(k int) {
	w.t.Helper()
	for range k {
		if _, err := w.db.Exec(`INSERT INTO t (i, pad) VALUES (?, hex(randomblob(2048)))`, w.n+1); err != nil {
			w.t.Fatal(err)
		}
		w.n++
	}
}

// TestReaderHelper is the reader side of TestReaderWhileWritersWrite.
func TestReaderHelper(t *testing.T) {
	path := os.Getenv("SQLITEDB_READER")
	if path == "" {
		return // only run as a helper process (a skip would be listed by make test)
	}
	ctx := context.Background()
	db, err := Open(ctx, path, Options{ReadOnly: true, Migrations: readerSchema})
	var pe *PathError
	if errors.As(err, &pe) {
		fmt.Println("refused:", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fmt.Println("opened")
	seen, reads, transient := 0, 0, 0
	for {
		b, doneErr := os.ReadFile(os.Getenv("SQLITEDB_DONE"))
		var n, max int
		if err := db.QueryRowContext(ctx, `SELECT count(*), coalesce(max(i), 0) FROM t`).Scan(&n, &max); err != nil {
			// A writer opening the database rebuilds the WAL index: the
			// read fails whole (nothing stale or torn), and is retried.
			if Transient(err) && transient < 1000 {
				transient++
				time.Sleep(time.Millisecond)
				continue
			}
			t.Fatalf("read %d: %v", reads, err)
		}
		reads++
		if n != max || n < seen {
			t.Fatalf("read %d: %d rows up to %d, after seeing %d", reads, n, max, seen)
		}
		seen = n
		if doneErr == nil {
			if want, _ := strconv.Atoi(string(b)); n != want {
				t.Fatalf("after the last commit: %d rows, want %d", n, want)
			}
			fmt.Printf("%d reads, %d rows, %d transient\n", reads, n, transient)
			return
		}
	}
}
