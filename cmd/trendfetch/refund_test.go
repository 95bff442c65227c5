package main

import (
	"net"
	"strings"
	"testing"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// TestRunAgainstClosedPortSpendsNothing runs the binary against an API
// endpoint where nothing listens (every connection refused: the requests
// never leave the host), on the embedded quota database and on a real
// redis-server. The run fails after its three attempts, each reserved and
// refunded, and `quota status` then shows 0 units used.
func TestRunAgainstClosedPortSpendsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()

	for _, backend := range []string{"sqlite", "redis"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t)
			e.vars["YOUTUBE_API_KEY"] = "k"
			if backend == "redis" {
				e.vars["TRENDFETCH_REDIS_URL"] = redistest.Start(t).URL()
			}
			cfg := e.writeConfig("api:\n  retries: 2\n  retry_backoff: 1ms\n")
			res := e.run("--config", cfg, "--api-endpoint", closed, "run", "--region", "US")
			if res.code != 1 || !strings.Contains(res.stderr, "connection refused") {
				t.Fatalf("run against a closed port: exit %d, want 1 with connection refused\n%s", res.code, res.stderr)
			}
			if n := strings.Count(res.stderr, "its units were refunded"); n != 3 {
				t.Errorf("%d refunds logged, want 3 (one per attempt)\n%s", n, res.stderr)
			}
			st := quotaStatus(t, e, "--config", cfg)
			if st.Backend != backend {
				t.Fatalf("quota status backend %q, want %q", st.Backend, backend)
			}
			for _, b := range st.Buckets {
				if b.Used != 0 || b.UsedToday != 0 {
					t.Errorf("bucket %s: used %d, today %d after the run; want 0", b.Name, b.Used, b.UsedToday)
				}
			}
		})
	}
}
