package quota

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Multi-process tests: the test binary re-executes itself (the standard
// TestHelperProcess pattern) so that several OS processes, each with its own
// backend connection, reserve against one credential at once.
//
// A child is selected by environment variables:
//
//	QUOTA_TEST_HELPER=overadmission   the role (the only one so far)
//	QUOTA_TEST_BACKEND=<scheme>:<arg>  e.g. sqlite:/tmp/x/quota.db or redis:redis://127.0.0.1:6379/0
//	QUOTA_TEST_CREDENTIAL=<name>
//	QUOTA_TEST_LIMIT=<units>           limit of the one bucket "units" (window 1 h)
//	QUOTA_TEST_HEAVY_PCT=<0..100>      share of cost-100 calls, the rest cost 1
//	QUOTA_TEST_SEED=<n>
//	QUOTA_TEST_PAUSE_US=<n>            random pause of 0..n µs between calls (0: none)
//
// The child opens the backend, prints "READY", waits for a line on stdin,
// then reserves until a cost-1 call is denied (a denied cost-100 call just
// switches to cost 1), and prints "ADMITTED <units> <calls> <denials>".

const (
	envHelper     = "QUOTA_TEST_HELPER"
	envBackend    = "QUOTA_TEST_BACKEND"
	envCredential = "QUOTA_TEST_CREDENTIAL"
	envLimit      = "QUOTA_TEST_LIMIT"
	envHeavyPct   = "QUOTA_TEST_HEAVY_PCT"
	envSeed       = "QUOTA_TEST_SEED"
	envPause      = "QUOTA_TEST_PAUSE_US"

	procWindow = time.Hour
)

// procBucket is the bucket "units" of the multi-process tests.
func procBucket(limit int64) Bucket {
	return Bucket{Name: "units", Limit: limit, Window: procWindow}
}

// procBackends opens a backend from the argument of a backend spec, by scheme.
var procBackends = map[string]func(arg string) (Backend, error){
	"sqlite": func(path string) (Backend, error) { return NewSQLite(path, false) },
}

// registerProcBackend makes scheme usable in backend specs of helper
// processes; it returns true so that another test file can register without
// init(): var _ = registerProcBackend("redis", func(url string) (Backend, error) { ... }).
func registerProcBackend(scheme string, open func(arg string) (Backend, error)) bool {
	procBackends[scheme] = open
	return true
}

// openProcBackend opens the backend named by spec ("<scheme>:<arg>").
func openProcBackend(spec string) (Backend, error) {
	scheme, arg, ok := strings.Cut(spec, ":")
	open := procBackends[scheme]
	if !ok || open == nil {
		return nil, fmt.Errorf("backend spec %q: want <scheme>:<arg> with scheme one of %v", spec, procSchemes())
	}
	return open(arg)
}

func procSchemes() []string {
	var s []string
	for k := range procBackends {
		s = append(s, k)
	}
	return s
}

// TestHelperProcess is not a test: it is the child side of runOverAdmission
// and does nothing unless QUOTA_TEST_HELPER is set.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) != "overadmission" {
		return
	}
	// os.Exit below main is acceptable here: this is a child process
	// whose only output is what it prints.
	if err := overAdmissionChild(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func overAdmissionChild(stdin io.Reader, stdout io.Writer) error {
	limit, err := strconv.ParseInt(os.Getenv(envLimit), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", envLimit, err)
	}
	heavyPct, err := strconv.Atoi(os.Getenv(envHeavyPct))
	if err != nil {
		return fmt.Errorf("%s: %w", envHeavyPct, err)
	}
	seed, err := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", envSeed, err)
	}
	pauseUS, err := strconv.Atoi(os.Getenv(envPause))
	if err != nil {
		return fmt.Errorf("%s: %w", envPause, err)
	}
	cred := os.Getenv(envCredential)
	b, err := openProcBackend(os.Getenv(envBackend))
	if err != nil {
		return err
	}
	defer b.Close()
	units := procBucket(limit)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	fmt.Fprintln(stdout, "READY")
	if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the start line: %w", err)
	}
	ctx := context.Background()
	var admitted, calls, denials int64
	retryCheap := false
	for {
		// A real caller makes an API call between reservations; a short
		// pause lets the other processes take the write lock in between
		// (SQLite's busy handler is not fair to sleepers).
		if pauseUS > 0 {
			time.Sleep(time.Duration(rng.IntN(pauseUS)) * time.Microsecond)
		}
		cost := int64(1)
		if !retryCheap && rng.IntN(100) < heavyPct {
			cost = 100
		}
		retryCheap = false
		d, err := b.Reserve(ctx, cred, "", []bucketCharge{{Bucket: units, Units: cost}})
		if err != nil {
			return fmt.Errorf("after %d units: %w", admitted, err)
		}
		if !d.Allowed {
			denials++
			if cost == 1 {
				break
			}
			retryCheap = true // a denied 100 may still leave room for a 1
			continue
		}
		admitted += cost
		calls++
	}
	fmt.Fprintf(stdout, "ADMITTED %d %d %d\n", admitted, calls, denials)
	return nil
}

// runOverAdmission starts procs helper processes against the backend named
// by backendSpec ("sqlite:PATH", "redis:URL", or any scheme registered with
// registerProcBackend) on one fresh credential with one bucket "units" of
// limit units per hour. Each child reserves a random mix of cost-1 and
// cost-100 calls until a cost-1 call is denied. The test fails unless the
// units admitted across all processes sum to exactly limit, and the backend's
// Status agrees. The credential is reset on cleanup.
func runOverAdmission(t *testing.T, backendSpec string, procs int, limit int64) {
	t.Helper()
	runOverAdmissionMix(t, backendSpec, procs, limit, defaultProcMix)
}

// procMix shapes the load of each helper process.
type procMix struct {
	heavyPct int // share of cost-100 calls, in percent; the rest cost 1
	pauseUS  int // random pause of 0..pauseUS µs between calls
}

var defaultProcMix = procMix{heavyPct: 10, pauseUS: 500}

func runOverAdmissionMix(t *testing.T, backendSpec string, procs int, limit int64, mix procMix) {
	t.Helper()
	b, err := openProcBackend(backendSpec)
	if err != nil {
		t.Fatalf("open %s: %v", backendSpec, err)
	}
	t.Cleanup(func() { b.Close() })
	cred := suiteCredential(t, b)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	children := make([]*child, procs)
	for i := range children {
		c := &child{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(),
			envHelper+"=overadmission",
			envBackend+"="+backendSpec,
			envCredential+"="+cred,
			envLimit+"="+strconv.FormatInt(limit, 10),
			envHeavyPct+"="+strconv.Itoa(mix.heavyPct),
			envSeed+"="+strconv.FormatInt(time.Now().UnixNano()+int64(i), 10),
			envPause+"="+strconv.Itoa(mix.pauseUS),
		)
		c.cmd.Stderr = &c.stderr
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdout = bufio.NewReader(out)
		if err := c.cmd.Start(); err != nil {
			t.Fatalf("start helper %d: %v", i, err)
		}
		children[i] = c
	}
	t.Cleanup(func() {
		for _, c := range children {
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	})
	// Every child has opened its backend before any reserves.
	for i, c := range children {
		line, err := c.stdout.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "READY" {
			c.cmd.Wait()
			t.Fatalf("helper %d: %q, %v; stderr:\n%s", i, line, err, c.stderr.String())
		}
	}
	start := time.Now()
	for _, c := range children {
		io.WriteString(c.stdin, "go\n")
		c.stdin.Close()
	}

	var (
		mu                    sync.Mutex
		total, calls, denials int64
		perChild              = make([]int64, procs)
		wg                    sync.WaitGroup
	)
	for i, c := range children {
		wg.Go(func() {
			rest, _ := io.ReadAll(c.stdout)
			err := c.cmd.Wait()
			var u, n, d int64
			found := false
			for _, line := range strings.Split(string(rest), "\n") {
				if _, serr := fmt.Sscanf(line, "ADMITTED %d %d %d", &u, &n, &d); serr == nil {
					found = true
				}
			}
			if err != nil || !found {
				t.Errorf("helper %d: %v; stdout:\n%s\nstderr:\n%s", i, err, rest, c.stderr.String())
				return
			}
			mu.Lock()
			total += u
			calls += n
			denials += d
			perChild[i] = u
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if t.Failed() {
		return
	}
	t.Logf("%d processes on %s: %d units in %d admitted calls (%d denials) in %v (%.0f decisions/s); per process %v",
		procs, strings.SplitN(backendSpec, ":", 2)[0], total, calls, denials, elapsed.Round(time.Millisecond),
		float64(calls+denials)/elapsed.Seconds(), perChild)
	if total != limit {
		t.Fatalf("processes were admitted %d units in total, want exactly the limit %d", total, limit)
	}
	st, err := b.Status(context.Background(), cred, []Bucket{procBucket(limit)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bs := st.Buckets[0]; bs.Used != limit || bs.Entries != calls || bs.Remaining != 0 {
		t.Fatalf("Status = used %d, entries %d, remaining %d; want %d, %d, 0", bs.Used, bs.Entries, bs.Remaining, limit, calls)
	}
}

// The scenario: 8 processes, the default 9,500-unit bucket.
func TestSQLiteProcessesNoOverAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	runOverAdmission(t, "sqlite:"+filepath.Join(t.TempDir(), "quota.db"), 8, 9500)
}

// A smaller run, mostly cost-1 calls.
func TestSQLiteProcessesSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	runOverAdmissionMix(t, "sqlite:"+filepath.Join(t.TempDir(), "quota.db"), 4, 1500, procMix{heavyPct: 2, pauseUS: 200})
}
