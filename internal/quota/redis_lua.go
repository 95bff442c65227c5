package quota

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// luaFiles are the Redis backend's scripts, each run right below by the method that builds its
// arguments and decodes its reply (docs/quota.md, "The scripts").
//
//go:embed lua/*.lua
var luaFiles embed.FS

// luaSource returns the scripts lua/<name>.lua of names, concatenated.
func luaSource(names ...string) (src string) {
	for _, name := range names {
		b, _ := luaFiles.ReadFile("lua/" + name + ".lua") // embedded: cannot fail
		src += string(b)
	}
	return src
}

// withMidnights appends to a script's ARGV the Pacific midnights around now.
func (r *redisBackend) withMidnights(args []any) []any { return r.withMidnightsAt(args, time.Now()) }

// withMidnightsAt appends to a script's ARGV the Pacific midnights around at, packed.
func (r *redisBackend) withMidnightsAt(args []any, at time.Time) []any {
	return append(args, redisPacked(r.midnights(at)))
}

// redisPacked returns vs as one script argument: little-endian doubles (exact below 2^53), which
// Lua's struct.unpack reads without the decimal parsing of tonumber.
func redisPacked(vs []int64) string {
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
	}
	return string(b)
}

// redisWindowUS is the bucket's window in µs as passed to the scripts (0: calendar).
func redisWindowUS(b Bucket) int64 {
	if b.Calendar {
		return 0
	}
	return b.Window.Microseconds()
}

// redisMidnightTable returns the Pacific midnights (Unix µs) from the day
// before now's Pacific date to two days after: the scripts pick Redis TIME's
// day, so a client clock up to a day off does not matter. Cached per day.
func redisMidnightTable(now time.Time) []int64 {
	us := now.UnixMicro()
	if t := midnightCache.Load(); t != nil && us >= t[1] && us < t[2] {
		return t[:]
	}
	p := DayStart(now).In(pacific)
	var t [4]int64
	for d := -1; d <= 2; d++ {
		t[d+1] = time.Date(p.Year(), p.Month(), p.Day()+d, 0, 0, 0, 0, pacific).UnixMicro()
	}
	midnightCache.Store(&t)
	return t[:]
}

var midnightCache atomic.Pointer[[4]int64]

// redisOnceScript is a script that must not run twice for one call (reserve,
// refund): a command whose reply was lost may have run, so it is sent again,
// once, only when the error proves it did not (redisDidNotRun).
type redisOnceScript struct {
	*redis.Script
	src string
}

func newRedisOnceScript(src string) redisOnceScript {
	return redisOnceScript{Script: redis.NewScript(src), src: src}
}

// RunOnce runs s on c like Script.Run (EVALSHA, then EVAL on NOSCRIPT), as
// commands go-redis never retries; the reply or error is in the command.
func (s redisOnceScript) RunOnce(ctx context.Context, c redisProcessor, keys []string, args ...any) *redis.Cmd {
	return s.run(ctx, c, s.evalsha(keys, args))
}

// evalsha returns the arguments of "EVALSHA <sha1> <numkeys> keys... args...".
func (s redisOnceScript) evalsha(keys []string, args []any) []any {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", s.Hash(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return append(a, args...)
}

// run sends the command evalsha (read only: it may be shared), or EVAL with
// the same keys and arguments on NOSCRIPT, as RunOnce says.
func (s redisOnceScript) run(ctx context.Context, c redisProcessor, evalsha []any) *redis.Cmd {
	var cmd redisOnceCmd
	for attempt := 0; ; attempt++ {
		cmd = redisOnceCmd{redis.NewCmd(ctx, evalsha...)}
		err := c.Process(ctx, cmd)
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmd = redisOnceCmd{redis.NewCmd(ctx, append([]any{"eval", s.src}, evalsha[2:]...)...)}
			err = c.Process(ctx, cmd)
		}
		if err == nil || attempt == 1 || !redisDidNotRun(err) {
			return cmd.Cmd
		}
		select {
		case <-ctx.Done():
			return cmd.Cmd
		case <-time.After(25 * time.Millisecond): // before resending: a failover client finds the new master
		}
	}
}

// redisProcessor runs one command: a redis.UniversalClient or a *redis.Conn.
type redisProcessor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// redisOnceCmd is a command go-redis must not retry.
type redisOnceCmd struct{ *redis.Cmd }

// NoRetry implements redis.Cmder: always true.
func (redisOnceCmd) NoRetry() bool { return true }

// redisDidNotRun reports whether err proves that a command never ran: no connection, or a refusal
// before anything was written (a replica, a server loading or without its master, Cluster down,
// min-replicas-to-write): the replies go-redis retries other commands on.
func redisDidNotRun(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	for _, p := range []string{"READONLY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS", "ERR max number of clients reached"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

var redisReserveScript = newRedisOnceScript(luaSource("lib", "reserve"))

// redisReserveCall is the EVALSHA of reserve.lua for one credential, call site and charges under
// one Pacific midnight table, built once: a reservation then allocates no argument.
type redisReserveCall struct {
	charges   []bucketCharge
	midnights []int64
	evalsha   []any
}

// redisCallKey is the key of redisBackend.calls.
type redisCallKey struct{ credential, site string }

// maxCachedCalls bounds redisBackend.calls (serve's rate limiter has a
// credential per client): the cache is cleared when full.
const maxCachedCalls = 1024

// reserveCall returns the EVALSHA arguments of reserve.lua for charges of
// site and credential, from the cache when charges and midnights match.
func (r *redisBackend) reserveCall(credential, site string, charges []bucketCharge) []any {
	midnights := r.midnights(time.Now())
	key := redisCallKey{credential, site}
	r.callsMu.RLock()
	c := r.calls[key]
	r.callsMu.RUnlock()
	if c != nil && slices.Equal(c.charges, charges) && slices.Equal(c.midnights, midnights) {
		return c.evalsha
	}
	keys, packed := make([]string, 1, 1+len(charges)), make([]int64, 0, 3*len(charges))
	keys[0] = r.stateKey(credential)
	for _, c := range charges {
		keys = append(keys, r.bucketKey(credential, c.Name))
		limit := c.Limit
		if c.Shadow {
			limit = -limit
		}
		packed = append(packed, c.Units, limit, redisWindowUS(c.Bucket))
	}
	args := []any{redisPacked(packed), markField(site), redisPacked(midnights)}
	c = &redisReserveCall{charges: slices.Clone(charges), midnights: slices.Clone(midnights), evalsha: redisReserveScript.evalsha(keys, args)}
	r.callsMu.Lock()
	if len(r.calls) >= maxCachedCalls {
		clear(r.calls)
	}
	r.calls[key] = c
	r.callsMu.Unlock()
	return c.evalsha
}

// Reserve implements Backend with lua/reserve.lua, one round trip (plus WAIT
// on the same connection when NewRedis's waitReplicas > 0).
func (r *redisBackend) Reserve(ctx context.Context, credential, site string, charges []bucketCharge) (Decision, error) {
	if err := redisCheckCredential(credential); err != nil {
		return Decision{}, err
	}
	var conn *redis.Conn
	var runner redisProcessor = r.client
	if r.waitReplicas > 0 {
		m, err := r.master(ctx, credential)
		if err != nil {
			return Decision{}, r.fail("reserve", credential, err)
		}
		conn = m.Conn()
		defer conn.Close()
		runner = conn
	}
	packed, err := redisReserveScript.run(ctx, runner, r.reserveCall(credential, site, charges)).Text()
	var d Decision
	if err == nil {
		d, err = redisDecision(redisUnpacked(packed), charges)
	}
	if err == nil && d.Allowed && conn != nil {
		err = r.wait(ctx, conn)
	}
	if err != nil {
		return Decision{}, r.fail("reserve", credential, err)
	}
	return d, nil
}

// redisUnpacked returns the doubles packed in s (reserve.lua's reply) as integers; a trailing
// partial double is dropped (redisDecision then refuses the reply's length).
func redisUnpacked(s string) []int64 {
	v := make([]int64, len(s)/8)
	for i := range v {
		v[i] = int64(math.Float64frombits(binary.LittleEndian.Uint64([]byte(s[8*i : 8*i+8]))))
	}
	return v
}

// redisDecision decodes reserve.lua's reply v for charges.
func redisDecision(v []int64, charges []bucketCharge) (Decision, error) {
	n := len(charges)
	if len(v) < 2 || (v[0] == 1 && len(v) != 2+2*n) || (v[0] == 0 && len(v) != 6+n) {
		return Decision{}, fmt.Errorf("unexpected reply of %d values", len(v))
	}
	allowed, now := v[0] == 1, v[1]
	d := Decision{Allowed: allowed, Now: time.UnixMicro(now), Remaining: make(map[string]int64, n)}
	if allowed { // per bucket: left, late
		d.Reservation.entries = make([]reservedEntry, 0, n)
		for i, c := range charges {
			left, late := v[2+2*i], v[3+2*i]
			d.Remaining[c.Name] = max(left-c.Units, 0)
			if c.Shadow && left < c.Units {
				d.ShadowDenied = append(d.ShadowDenied, c.Name)
			}
			d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: now + late})
		}
		return d, nil
	}
	denied, retryUS, exhausted, bySite := v[2], v[3], v[4], v[5]
	d.RetryAfter = time.Duration(retryUS) * time.Microsecond
	if denied > 0 {
		d.DeniedBucket = charges[denied-1].Name
	}
	if exhausted > 0 {
		d.Exhausted, d.ExhaustedUntil, d.SiteExhausted = true, time.UnixMicro(exhausted), bySite == 1
	}
	for i, c := range charges {
		d.Remaining[c.Name] = v[6+i] // left
	}
	return d, nil
}

// wait runs WAIT on conn, the connection that admitted a call: an error
// when fewer than waitReplicas replicas confirm it (the entry stays).
func (r *redisBackend) wait(ctx context.Context, conn *redis.Conn) error {
	switch got, err := conn.Wait(ctx, r.waitReplicas, r.waitTimeout).Result(); {
	case err != nil:
		return fmt.Errorf("admitted, but WAIT failed (the entry stays): %w", err)
	case got < int64(r.waitReplicas):
		return fmt.Errorf("%w: admitted, but WAIT confirmed %d of %d replicas within %s (the entry stays)", errNotReplicated, got, r.waitReplicas, r.waitTimeout)
	}
	return nil
}

var redisStatusScript = redis.NewScript(luaSource("lib", "status"))

// Status implements Backend with lua/status.lua, which writes nothing.
func (r *redisBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (st Status, err error) {
	if err := redisCheckCredential(credential); err != nil {
		return st, err
	}
	keys, args := []string{r.stateKey(credential)}, []any{}
	for _, b := range buckets {
		keys = append(keys, r.bucketKey(credential, b.Name))
		args = append(args, b.Limit, redisWindowUS(b), max(maxCost[b.Name], 1))
	}
	args = r.withMidnights(args)
	// Reply: now, per bucket used, entries, oldest, retry_1, retry_max, today, then marks' field, value.
	reply, err := redisStatusScript.Run(ctx, r.client, keys, args...).Slice()
	n := 1 + 6*len(buckets)
	if err == nil && (len(reply) < n || (len(reply)-n)%2 != 0) {
		err = fmt.Errorf("unexpected reply of %d values", len(reply))
	}
	res := make([]int64, n)
	for i := 0; err == nil && i < n; i++ {
		var ok bool
		if res[i], ok = reply[i].(int64); !ok {
			err = fmt.Errorf("unexpected reply value %v", reply[i])
		}
	}
	if err != nil {
		return st, r.fail("status", credential, err)
	}
	st.Now = time.UnixMicro(res[0])
	var shadow []shadowRow
	var holds []holdRecord
	st.Marks, shadow, holds = redisStatusTail(reply[n:])
	slices.SortFunc(st.Marks, func(a, b Mark) int { return strings.Compare(a.Site, b.Site) })
	for i, b := range buckets {
		v := res[1+6*i : 7+6*i]
		used, entries, oldest, retry1, retryMax, today := v[0], v[1], v[2], v[3], v[4], v[5]
		bs := BucketStatus{Bucket: b, Used: used, Remaining: max(b.Limit-used, 0), Entries: entries,
			RetryAfterOne: time.Duration(retry1) * time.Microsecond, MaxCost: max(maxCost[b.Name], 1),
			RetryAfterMax: time.Duration(retryMax) * time.Microsecond, UsedToday: today}
		if oldest > 0 {
			bs.Oldest = time.UnixMicro(oldest)
		}
		st.Buckets = append(st.Buckets, bs)
	}
	addShadowDenials(&st, shadow)
	addHolds(&st, holds)
	return st, nil
}

// redisStatusTail decodes the pairs ending status.lua's reply: the marks in
// force ("exhausted[:<site>]" = "<until> <why>"), today's shadow counts
// ("shadow:<bucket>:<site>" = "<day> <count>") and the holds ("holds").
func redisStatusTail(pairs []any) (marks []Mark, shadow []shadowRow, holds []holdRecord) {
	for j := 0; j+1 < len(pairs); j += 2 {
		field, _ := pairs[j].(string)
		value, _ := pairs[j+1].(string)
		if field == "holds" {
			holds = redisHolds(value)
			continue
		}
		first, rest, _ := strings.Cut(value, " ")
		if bucketSite, ok := strings.CutPrefix(field, "shadow:"); ok {
			at := strings.LastIndexByte(bucketSite, ':')
			if count, err := strconv.ParseInt(rest, 10, 64); at >= 0 && err == nil {
				shadow = append(shadow, shadowRow{bucket: bucketSite[:at], site: bucketSite[at+1:], n: count})
			}
			continue
		}
		if until, err := strconv.ParseInt(first, 10, 64); err == nil {
			site := strings.TrimPrefix(strings.TrimPrefix(field, "exhausted"), ":")
			marks = append(marks, Mark{Site: site, Until: time.UnixMicro(until), Why: rest})
		}
	}
	return marks, shadow, holds
}

var redisHoldScript = newRedisOnceScript(luaSource("lib", "hold"))

// Hold implements Backend with lua/hold.lua, one round trip.
func (r *redisBackend) Hold(ctx context.Context, credential, id string, hs []holdCharge, spendFor time.Duration) ([]int64, error) {
	if err := redisCheckCredential(credential); err != nil {
		return nil, err
	}
	keys, args := []string{r.stateKey(credential)}, []any{strings.ReplaceAll(id, " ", "_"), spendFor.Microseconds()}
	for _, h := range hs {
		keys = append(keys, r.bucketKey(credential, h.Name))
		args = append(args, h.Limit, redisWindowUS(h.Bucket), h.Spent, h.Want)
	}
	v, err := redisHoldScript.RunOnce(ctx, r.client, keys, r.withMidnights(args)...).Int64Slice()
	if err == nil && len(v) != 1+len(hs) {
		err = fmt.Errorf("unexpected reply of %d values", len(v))
	}
	if err != nil {
		return nil, r.fail("hold", credential, err)
	}
	return v[1:], nil
}

// redisHolds decodes the state hash field holds (lua/hold.lua).
func redisHolds(v string) (recs []holdRecord) {
	for _, line := range strings.Split(v, "\n") {
		var r holdRecord
		if _, err := fmt.Sscanf(line, "%s %s %d %d", &r.bucket, &r.id, &r.units, &r.untilUS); err == nil {
			recs = append(recs, r)
		}
	}
	return recs
}

var redisMarkScript = redis.NewScript(luaSource("lib", "mark"))

// markField is the state hash's field of the mark of site ("": the credential's).
func markField(site string) string {
	if site == "" {
		return "exhausted"
	}
	return "exhausted:" + site
}

// MarkExhausted implements Backend with lua/mark.lua.
func (r *redisBackend) MarkExhausted(ctx context.Context, credential string, m Mark) error {
	if err := redisCheckCredential(credential); err != nil {
		return err
	}
	// The midnights around Redis TIME, not the local clock (one more round trip, on a rare path).
	now, err := r.client.Time(ctx).Result()
	if err == nil {
		args := r.withMidnightsAt([]any{m.Until.UnixMicro(), markField(m.Site), m.Why}, now)
		err = redisMarkScript.Run(ctx, r.client, []string{r.stateKey(credential)}, args...).Err()
	}
	if err != nil {
		return r.fail("mark exhausted", credential, err)
	}
	return nil
}

var redisRefundScript = newRedisOnceScript(luaSource("lib", "refund"))

// Refund implements Backend with lua/refund.lua, one round trip.
func (r *redisBackend) Refund(ctx context.Context, credential string, res Reservation) (bool, error) {
	if err := redisCheckCredential(credential); err != nil {
		return false, err
	}
	if res.IsZero() {
		return false, nil
	}
	keys, args := []string{r.stateKey(credential)}, make([]any, 0, len(res.entries))
	for _, e := range res.entries {
		keys = append(keys, r.bucketKey(credential, e.bucket.Name))
		args = append(args, e.at, e.units)
	}
	n, err := redisRefundScript.RunOnce(ctx, r.client, keys, args...).Int64()
	if err != nil {
		return false, r.fail("refund", credential, err)
	}
	return n == 1, nil
}

// redisLeaseScript alone changes run leases: one key per lease (leaseKey)
// holding the token, with PX = ttl.
var redisLeaseScript = redis.NewScript(luaSource("lease"))

// lease runs lua/lease.lua's op on lease id with args.
func (r *redisBackend) lease(ctx context.Context, op string, id leaseID, args ...any) (any, error) {
	if err := redisCheckCredential(id.credential); err != nil {
		return nil, err
	}
	res, err := redisLeaseScript.Run(ctx, r.client, []string{r.leaseKey(id.credential, id.region)}, append([]any{op}, args...)...).Result()
	if err != nil {
		return nil, r.fail("lease "+op, id.credential, err)
	}
	return res, nil
}

// TryLock implements leaseLocker.
func (r *redisBackend) TryLock(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, string, time.Duration, error) {
	ms := ceilTo(ttl, time.Millisecond)
	reply, err := r.lease(ctx, "lock", id, token, ms)
	if err != nil {
		return false, "", 0, err
	}
	switch res, _ := reply.([]any); {
	case len(res) == 1 && res[0] == int64(1):
		return true, leaseHolderOf(token), time.Duration(ms) * time.Millisecond, nil
	case len(res) == 3 && res[0] == int64(0):
		cur, _ := res[1].(string)
		pttl, _ := res[2].(int64)
		return false, leaseHolderOf(cur), time.Duration(max(pttl, 0)) * time.Millisecond, nil
	default:
		return false, "", 0, fmt.Errorf("quota: redis lease lock: unexpected reply %v", reply)
	}
}

// Renew implements leaseLocker.
func (r *redisBackend) Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, error) {
	n, err := r.lease(ctx, "renew", id, token, ceilTo(ttl, time.Millisecond))
	return n == int64(1), err
}

// Unlock implements leaseLocker.
func (r *redisBackend) Unlock(ctx context.Context, id leaseID, token string) error {
	_, err := r.lease(ctx, "unlock", id, token)
	return err
}

// BreakLease implements leaseLocker.
func (r *redisBackend) BreakLease(ctx context.Context, id leaseID, holder string) (bool, error) {
	n, err := r.lease(ctx, "break", id, holder)
	return n == int64(1), err
}

// Leases implements leaseLocker: SCAN, then GET and PTTL per lease.
func (r *redisBackend) Leases(ctx context.Context, credential string) ([]LeaseInfo, error) {
	prefix := r.leaseKey(credential, "")
	var out []LeaseInfo
	err := r.scan(ctx, "lease list", credential, redisGlobEscaper.Replace(prefix)+"*", func(node redis.Cmdable, keys []string) error {
		for _, k := range keys {
			val, err := node.Get(ctx, k).Result()
			if errors.Is(err, redis.Nil) {
				continue // expired meanwhile
			}
			if err != nil {
				return err
			}
			pttl, err := node.PTTL(ctx, k).Result()
			if err != nil {
				return err
			}
			out = append(out, LeaseInfo{Credential: credential, Region: strings.TrimPrefix(k, prefix),
				Holder: describeHolder(leaseHolderOf(val)), stored: leaseHolderOf(val), Remaining: max(pttl, 0)})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b LeaseInfo) int { return strings.Compare(a.Region, b.Region) })
	return out, err
}
