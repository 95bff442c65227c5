package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	procinfo "github.com/trendfetch/trendfetch/internal/proc"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// hangingPage2 makes the emulator hang page 2 of a chart until the client
// gives up, and returns a channel told when page 2 was asked for.
func hangingPage2(t *testing.T, regions ...string) (*envEmu, chan struct{}) {
	t.Helper()
	emu, url, e := sampleEnv(t, regions...)
	inFlight := make(chan struct{}, 1)
	emu.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("pageToken") != "" {
			select {
			case inFlight <- struct{}{}:
			default:
			}
			<-r.Context().Done()
			return true
		}
		return false
	})
	return &envEmu{e: e, url: url, units: func() int64 { return emu.Units("k") }, unhook: func() { emu.SetHook(nil) }}, inFlight
}

type envEmu struct {
	e      *env
	url    string
	units  func() int64
	unhook func()
}

func waitFor(t *testing.T, ch chan struct{}, p *proc) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("page 2 never requested; stderr:\n%s", p.stderr.String())
	}
}

// TestKill9HolderIsTakenOverAtOnce kills -9 a run that holds its region's
// lease (embedded backend, and Redis) after it reserved its calls: the next
// run succeeds at once (the holder is a process of this host that is gone),
// says it took the lease over, and marks the killed run abandoned with the
// units it had reserved, which are the units the API charged plus at most
// the one reserved call not yet answered.
func TestKill9HolderIsTakenOverAtOnce(t *testing.T) {
	for _, backend := range []string{"sqlite", "redis"} {
		t.Run(backend, func(t *testing.T) {
			ee, inFlight := hangingPage2(t, "US")
			e := ee.e
			if backend == "redis" {
				e.vars["TRENDFETCH_REDIS_URL"] = redistest.Start(t).URL()
			}
			cfg := e.writeConfig("runs:\n  lease_ttl: 1h\n") // only a takeover can free it in time
			args := []string{"--config", cfg, "--api-endpoint", ee.url, "run", "--region", "US"}
			p := e.spawn(args...)
			waitFor(t, inFlight, p)
			res := e.run("--config", cfg, "lease", "list", "--json")
			var leases []leaseJSON
			if err := json.Unmarshal([]byte(res.stdout), &leases); err != nil || len(leases) != 1 ||
				!strings.Contains(leases[0].Holder, fmt.Sprintf(" pid %d since ", p.cmd.Process.Pid)) {
				t.Errorf("lease list --json while the run holds US: exit %d %v %+v\n%s", res.code, err, leases, res.stderr)
			}
			charged := ee.units()
			p.cmd.Process.Kill()
			p.wait(t, 10*time.Second)
			ee.unhook()

			res = e.runBounded(20*time.Second, args...)
			if res.code != 0 {
				t.Fatalf("run after kill -9: exit %d, want 0 at once\n%s", res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, "took over the run lease") {
				t.Errorf("the takeover is not logged:\n%s", res.stderr)
			}
			runs, err := openStore(t, e.dbPath()).Runs(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 {
				t.Fatalf("runs = %+v, want 2", runs)
			}
			killed := runs[1]
			if killed.PID != p.cmd.Process.Pid || killed.Outcome != store.OutcomeAbandoned {
				t.Errorf("killed run = %+v, want pid %d abandoned", killed, p.cmd.Process.Pid)
			}
			if u := killed.Units["units"]; u < charged || u > charged+1 || u < 2 {
				t.Errorf("killed run shows %d units; the API charged %d before the kill", u, charged)
			}
			if runs[0].Outcome != store.OutcomeSuccess {
				t.Errorf("run after kill: %+v", runs[0])
			}
		})
	}
}

// TestSIGHUPInterruptsLikeSIGTERM: SIGHUP (a closed terminal, a systemd
// reload) ends a run as interrupted, exit 129, and says which signal.
func TestSIGHUPInterruptsLikeSIGTERM(t *testing.T) {
	for _, sig := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGHUP, "SIGHUP", 129}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(sig.name, func(t *testing.T) {
			ee, inFlight := hangingPage2(t, "US")
			p := ee.e.spawn("--api-endpoint", ee.url, "run", "--region", "US")
			waitFor(t, inFlight, p)
			if err := p.cmd.Process.Signal(sig.sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 20*time.Second); code != sig.code {
				t.Fatalf("after %s: exit %d, want %d\n%s", sig.name, code, sig.code, p.stderr.String())
			}
			want := "interrupted by " + sig.name
			if got := lastLine(humanErrors(p.stderr.String())); got != "trendfetch: "+want {
				t.Errorf("last line %q, want %q", got, "trendfetch: "+want)
			}
			if strings.Contains(p.stderr.String(), `"level":"error"`) {
				t.Errorf("an asked-for interrupt is logged at error level:\n%s", p.stderr.String())
			}
			runs, err := openStore(t, ee.e.dbPath()).Runs(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 || runs[0].Outcome != store.OutcomeInterrupted || runs[0].Reason != want {
				t.Fatalf("runs = %+v, want one interrupted run, reason %q", runs, want)
			}
		})
	}
}

// TestLeaseHoldersByRule plants leases in the embedded backend: holders on
// another host, or live on this host, keep the region (exit 3) and are
// listed as stored; `lease release --yes` frees one; holders of this host that are
// gone, or whose pid now belongs to a process that started at another tick
// (pid reuse), are taken over at once.
func TestLeaseHoldersByRule(t *testing.T) {
	_, url, e := sampleEnv(t, "US")
	args := []string{"--api-endpoint", url, "run", "--region", "US"}
	if res := e.run(args...); res.code != 0 {
		t.Fatalf("first run: exit %d\n%s", res.code, res.stderr)
	}
	host, _ := os.Hostname()
	now := time.Now().UTC().Format(time.RFC3339)
	// holder is a lease holder as trendfetch stores it (quota's
	// staleHolder): this boot and PID namespace, pid started at ticks
	// after boot; desc is how it is shown.
	holder := func(host string, pid int, ticks uint64, since string) (stored, desc string) {
		ns, _ := os.Readlink("/proc/self/ns/pid")
		boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
		stored = fmt.Sprintf(`{"host":%q,"pid":%d,"boot_id":%q,"pid_ns":%q,"start_ticks":%d,"since":%q}`, host, pid, strings.TrimSpace(string(boot)), ns, ticks, since)
		return stored, fmt.Sprintf("%s pid %d since %s", host, pid, since)
	}
	ticks := procinfo.StartTicks(os.Getpid())
	plant := func(holder string) {
		t.Helper()
		plantLease(t, filepath.Join(e.dir, "data", "trendfetch", "quota.db"), holder)
	}

	// Another host: held until released by hand.
	stored, other := holder("other-host", 1, 1, now)
	plant(stored)
	if res := e.run(args...); res.code != 3 || !strings.Contains(res.stderr, other) {
		t.Errorf("run under another host's lease: exit %d, want 3 naming %q\n%s", res.code, other, res.stderr)
	}
	res := e.run("lease", "list", "--json")
	var leases []leaseJSON
	if err := json.Unmarshal([]byte(res.stdout), &leases); err != nil || len(leases) != 1 || leases[0].Holder != other {
		t.Errorf("lease list --json: exit %d %v %+v\n%s%s", res.code, err, leases, res.stdout, res.stderr)
	}
	if res := e.run("lease", "release", "--region", "US", "--credential", "default", "--yes"); res.code != 0 {
		t.Errorf("release --yes: exit %d\n%s", res.code, res.stderr)
	}
	if res := e.run(args...); res.code != 0 {
		t.Errorf("run after the release: exit %d\n%s", res.code, res.stderr)
	}

	// This host, a live process, the lease recorded as taken long before
	// the process started (as after a step of the wall clock): held.
	live, _ := holder(host, os.Getpid(), ticks, "2001-01-01T00:00:00Z")
	plant(live)
	if res := e.run(args...); res.code != 3 {
		t.Errorf("run under a live holder of this host: exit %d, want 3\n%s", res.code, res.stderr)
	}
	e.run("lease", "release", "--region", "US", "--yes")

	// This host, the pid now belongs to a process that started at another
	// tick: the holder is gone.
	reused, _ := holder(host, os.Getpid(), ticks-1, now)
	plant(reused)
	if res := e.run(args...); res.code != 0 || !strings.Contains(res.stderr, "took over") {
		t.Errorf("run under a reused pid's lease: exit %d, want 0 with a takeover\n%s", res.code, res.stderr)
	}

	// This host, no such process.
	gone, _ := holder(host, 1<<22+7, 0, now)
	plant(gone)
	if res := e.run(args...); res.code != 0 || !strings.Contains(res.stderr, "took over") {
		t.Errorf("run under a dead pid's lease: exit %d, want 0 with a takeover\n%s", res.code, res.stderr)
	}
}

// TestLeaseListAndRelease: `lease list` shows a held lease (JSON: the
// exact holder; the table: its terminal escapes made visible); `lease
// release` asks for --yes (exit 2), then releases it, then finds none.
func TestLeaseListAndRelease(t *testing.T) {
	p := newInproc(t, "", nil)
	ctx := context.Background()
	o := &leaseOptions{engine: p.engine(), credential: "default"}
	o.io = p.a.ioStreams
	if err := leaseListRun(ctx, o); err != nil || p.out.String() != "no region leases held\n" {
		t.Errorf("lease list without a quota database: %v %q", err, p.out.String())
	}
	lim, err := o.engine.OpenLimiter(false)
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	if _, err := lim.AcquireLease(ctx, "default", "US", time.Hour, hostileTitle); err != nil {
		t.Fatal(err)
	}
	var leases []leaseJSON
	p.reset()
	o.asJSON = true
	if err := leaseListRun(ctx, o); err != nil || json.Unmarshal(p.out.Bytes(), &leases) != nil || len(leases) != 1 ||
		leases[0].Holder != hostileTitle || leases[0].Region != "US" || leases[0].ExpiresInMs <= 0 {
		t.Errorf("lease list --json: %v %+v, want US with the exact holder", err, leases)
	}
	human := func(step string, err error) {
		t.Helper()
		out := p.out.String()
		if err != nil {
			out += err.Error()
		}
		if bad := terminalUnsafe(out); bad != "" || !strings.Contains(out, `\x1b]0;pwned\x07`) || !strings.Contains(out, `\u202e`) {
			t.Errorf("%s: terminal-unsafe %q, or the holder not shown escaped:\n%s", step, bad, out)
		}
		p.reset()
	}
	p.reset()
	o.asJSON = false
	human("lease list", leaseListRun(ctx, o))
	for _, bad := range []string{"", "XX"} {
		if o.region = bad; exit(leaseReleaseRun(ctx, o)) != exitcode.Usage {
			t.Errorf("lease release --region %q: want a usage error", bad)
		}
	}
	o.region = "us"
	err = leaseReleaseRun(ctx, o)
	if exit(err) != exitcode.Usage || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("release without --yes: %v, want exit 2 asking for --yes", err)
	}
	human("lease release", err)
	o.yes = true
	err = leaseReleaseRun(ctx, o)
	if err != nil || !strings.HasPrefix(p.out.String(), "released region US of credential default (held by ") {
		t.Errorf("release --yes: %v %q", err, p.out.String())
	}
	human("lease release --yes", err)
	if err := leaseReleaseRun(ctx, o); err != nil || p.out.String() != "region US of credential default: no lease held\n" {
		t.Errorf("release of a free region: %v %q", err, p.out.String())
	}
}

// plantLease writes the lease of region US of credential default, held by
// holder for an hour, into the quota database at path, as another
// process's lease would be stored.
func plantLease(t *testing.T, path, holder string) {
	t.Helper()
	b, err := quota.NewSQLite(path, false) // the schema
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT OR REPLACE INTO leases (name, token, holder, expires_us) VALUES ('default:US', ?, ?, ?)`,
		"planted "+holder, holder, time.Now().Add(time.Hour).UnixMicro()); err != nil {
		t.Fatalf("planting %q: %v", holder, err)
	}
}
