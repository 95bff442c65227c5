package serve

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota"
)

// Limiter decides, per client, whether a request of the read API is
// admitted (RateLimit.Limiter): NewCounter or NewRedisCounter.
type Limiter interface {
	// Allow counts one request of the client named key if it is admitted;
	// an error means the backend could not decide.
	Allow(ctx context.Context, key string) (Decision, error)
	// Close releases the limiter's backend.
	Close() error
}

// Decision is a Limiter's answer for one request: Allowed when it was admitted and counted;
// Remaining, how many more fit now (0 when denied); RetryAfter, when denied, the wait until one
// fits again if the client sends nothing meanwhile (rounded up to a millisecond).
type Decision struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
}

// counterState is one client's sliding-window counter: the index of its current window (unix ms /
// window), the requests admitted in the window before it and in it.
type counterState struct {
	win       int64
	prev, cur int32
}

// counterDecide is the sliding-window counter (docs/serve-rate-limit.md): admitted when
// prev x (the part of the previous window still inside the sliding one) + cur + 1 <= limit. It
// returns the state after the decision. ratelimit.lua is the same integer arithmetic on Redis.
func counterDecide(st counterState, nowMS, windowMS, limit int64) (counterState, Decision) {
	idx := nowMS / windowMS
	elapsed := nowMS - idx*windowMS
	var prev, cur int64
	switch st.win {
	case idx:
		prev, cur = int64(st.prev), int64(st.cur)
	case idx - 1:
		prev = int64(st.cur)
	}
	room := limit*windowMS - prev*(windowMS-elapsed) - cur*windowMS
	if room < windowMS {
		var retry int64
		if cur+1 <= limit {
			retry = ceilDiv((windowMS-elapsed)*prev-(limit-cur-1)*windowMS, prev)
		} else {
			retry = (windowMS - elapsed) + ceilDiv((cur-limit+1)*windowMS, cur)
		}
		return st, Decision{RetryAfter: time.Duration(retry) * time.Millisecond}
	}
	return counterState{win: idx, prev: int32(prev), cur: int32(cur + 1)},
		Decision{Allowed: true, Remaining: (room - windowMS) / windowMS}
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// memoryCounter keeps the counters of one instance; a client's state is
// swept at the first decision of the second window after its own.
type memoryCounter struct {
	limit, windowMS int64
	now             func() time.Time

	mu      sync.Mutex
	clients map[string]counterState
	swept   int64 // window index of the last sweep
}

// NewCounter returns the in-memory sliding-window counter of limit requests per client per window
// (within serve.rate_limit's bounds, which config checks: 1 to 2^31-1 requests, window at least
// 1ms, limit x window under 2^53 ms); now is its clock (nil: time.Now).
func NewCounter(limit int64, window time.Duration, now func() time.Time) Limiter {
	if now == nil {
		now = time.Now
	}
	return &memoryCounter{limit: limit, windowMS: window.Milliseconds(), now: now, clients: map[string]counterState{}}
}

func (m *memoryCounter) Allow(_ context.Context, key string) (Decision, error) {
	nowMS := m.now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if idx := nowMS / m.windowMS; idx > m.swept {
		for k, st := range m.clients {
			if st.win < idx-1 {
				delete(m.clients, k)
			}
		}
		m.swept = idx
	}
	st, d := counterDecide(m.clients[key], nowMS, m.windowMS, m.limit)
	if d.Allowed {
		m.clients[key] = st
	}
	return d, nil
}

func (m *memoryCounter) Close() error { return nil }

//go:embed ratelimit.lua
var counterLua string

var counterScript = redis.NewScript(counterLua)

// redisCounter keeps the counters in Redis, one hash per client with a TTL,
// so that several instances share one budget per client.
type redisCounter struct {
	client   redis.UniversalClient
	limit    int64
	windowMS int64
}

// NewRedisCounter returns the sliding-window counter of limit requests per client per window
// (NewCounter's bounds) in Redis (one ratelimit.lua call per decision, on the server's clock).
// Close closes client.
func NewRedisCounter(client redis.UniversalClient, limit int64, window time.Duration) Limiter {
	return &redisCounter{client: client, limit: limit, windowMS: window.Milliseconds()}
}

func (r *redisCounter) Allow(ctx context.Context, key string) (Decision, error) {
	// The client name (no secret: clientKey) is the key's Redis Cluster hash tag.
	k := quota.RedisKeyPrefix + ":serve:{" + key + "}"
	res, err := counterScript.Run(ctx, r.client, []string{k}, r.limit, r.windowMS).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("rate limiter: %w", err)
	}
	if len(res) != 3 {
		return Decision{}, fmt.Errorf("rate limiter: script replied %v", res)
	}
	// {allowed, remaining, retry_after_ms}
	return Decision{Allowed: res[0] == 1, Remaining: res[1], RetryAfter: time.Duration(res[2]) * time.Millisecond}, nil
}

func (r *redisCounter) Close() error { return r.client.Close() }

// clientKey names a client for the limiter: "serve-token-<tokenHash>"
// (a secret never becomes a key) when given, else "serve-ip-<address>", an
// IPv6 address by its /64 (one host usually has a whole /64).
func clientKey(remoteAddr, tokenHash string) string {
	if tokenHash != "" {
		return "serve-token-" + tokenHash
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return "serve-ip-" + strings.ToLower(host)
	}
	if v4 := ip.To4(); v4 != nil {
		return "serve-ip-" + v4.String()
	}
	return "serve-ip-" + ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
