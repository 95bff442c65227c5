package quota

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisEvictBatch is EVICT_BATCH of the reserve script: the most expired
// entries one admitted call removes (a test checks both agree).
const redisEvictBatch = 8

// The Redis backend's Lua scripts. Each is declared once here, with the
// KEYS, ARGV and reply it takes, right above the method that builds its
// arguments, runs it and decodes its reply (Reserve, Status,
// MarkExhausted, Refund; the lease scripts are in lease_redis.go). They run
// as EVALSHA, falling back to EVAL on NOSCRIPT (restart, failover, SCRIPT
// FLUSH): Script.Run, or redisOnceScript.RunOnce for the two that must
// not run twice for one call.
//
// # Data layout (one credential)
//
// Key trendfetch:{<credential>}:<bucket> is a bucket's log, a sorted set
// with one entry per admitted call:
//
//	score  = Redis TIME in microseconds when the call was admitted
//	member = "<cum>:<cost>", cum zero-padded to 16 digits
//
// cum is the bucket's running total after this entry: the units admitted
// into the key up to and including this call (a prefix sum). It strictly
// increases, so members are unique, and because scores strictly increase (a
// new score is max(TIME, newest score + 1 µs)) the sorted-set order (score,
// then member bytes) is also cum order. A score is therefore unique within
// its bucket, and it is never issued twice while the state hash lives (its
// newest is a high-water mark that a refund does not lower): (bucket,
// score, cost) is an entry's identity for Refund. A refund removes the
// entry and lowers the cum of every later entry by its cost (see
// redisRefundScript), so the prefix sums stay exact.
//
// Key trendfetch:{<credential>}:state is a hash: field "exhausted" holds the
// upstream exhaustion marker (until, Unix µs) and one field per bucket caches
// what a decision would otherwise read from the log, six doubles packed
// little-endian (struct.pack '<dddddd', 48 bytes):
//
//	total       cum of the newest entry
//	newest      score of the newest entry ever recorded (a refund keeps it)
//	split_lo    a window start for which the split below was found
//	split_cum   every entry with cum <= split_cum has score < split_lo
//	split_next  score of the first entry after the split (if total > split_cum)
//	oldest      a lower bound of the oldest entry's score (decides eviction)
//
// The log is the truth and the cache a shortcut, written by the same script
// as the log. Were the two to disagree (one key deleted or evicted, or the
// hash expired first), the cache can only over-count: a missing cache is
// rebuilt from the log, and a cache whose log lost entries counts units no
// longer there until they would have left the window. Every writer must run
// this script (a mixed fleet with an older layout would under-count). A
// bucket's field holds "log" instead when its counters were just converted
// into its log (switch.go, redis_counter.go) and no admission has written
// the cache yet; a decision rebuilds it from the log.
//
// # Algorithm (exact weighted sliding-window log, O(log n) per decision)
//
// A bucket's window at time now is [lo, now] with lo = now - window + 1 µs
// (sliding) or lo = the last Pacific midnight <= now (calendar mode).
//
//	used = total - base, base = cum before the first entry with score >= lo
//
// The cached split answers base without touching the log while it still
// holds: split_lo <= lo (the window did not grow, the clock did not step
// back) and split_next >= lo (the first entry after it is still inside), so
// base = split_cum. Otherwise, if newest < lo, nothing is in the window;
// else the first entry with score >= lo is read (ZRANGEBYSCORE LIMIT 1,
// O(log n)) and becomes the new split. The in-window sum therefore costs
// the same whatever the cost weights and however many entries expired since
// the last decision, and the common decision makes four redis.calls: TIME,
// HMGET state, ZADD log, HSET state.
//
// Removing expired entries is not needed to count, so eviction lags: at
// most redisEvictBatch entries per admitted call, when the cached oldest is
// before the cutoff (ZCOUNT + ZREMRANGEBYRANK, O(log n + redisEvictBatch);
// removing one entry costs Redis about 0.7 µs, so the batch is small: a
// backlog of 9,000 expired entries is cleared within 1,300 admitted calls
// while memory never grows, since each call adds one entry and removes up to
// 8); entries are kept back to the last Pacific midnight so that
// units-since-midnight (UsedToday) stays exact.
//
// A call is admitted when used + cost <= limit in every bucket it charges;
// then every bucket keeps its ZADD, gets eviction and PEXPIRE now and then,
// and the state hash its new caches. A denial leaves every key as it was:
// a log bucket that fit before a later bucket denied has its entry removed
// again by the same script (ZADD then ZREM: replicas and the AOF get both,
// no client sees either), and nothing else is written, except the one-time
// conversion of a bucket whose algorithm or counter geometry changed
// (switch.go; it moves usage from one form to the other, adding none).
// Retry-After for a denied bucket: the call fits once the entries up to the
// first one whose cum >= need = total + cost - limit have left the window;
// that entry is found by binary search over ranks (ZRANGE i i, one O(log n)
// probe per step, only on denial: O(log² n)); it leaves the window at score
// + window, so RetryAfter = score + window - now µs (never early: an entry
// with score s is outside the window from now = s + window on). In calendar
// mode everything leaves at the next Pacific midnight. The decision reports
// the largest Retry-After among the denying buckets.
//
// # Clock
//
// Only Redis TIME decides. Lua has no tz database, so Go passes the Pacific
// midnights around its own date (a table of Unix µs, computed with the
// embedded tzdata, see redisMidnightTable); the script picks the last one <=
// TIME and the first one > TIME. A client clock that is off by up to a day
// only shifts which table is sent, never the decision.
//
// Scripts call TIME before writing: allowed since Redis 5 (effects
// replication, the default); redis.replicate_commands() is called when
// present so 3.2/4.x replicate effects too (a no-op on 7.x).

// redisLuaPrelude holds the helpers shared by the scripts. Numbers are Lua
// doubles: Unix µs (~1.8e15) and running totals stay below 2^53, so cum
// fits the 16 padded digits of a member. A number passed as a redis.call
// argument is converted exactly by Redis (%.17g, or shortest round-trip
// from 7.2); Lua's own tostring/.. would round to 14 digits, so strings
// built in Lua use fmt.
const redisLuaPrelude = `
if redis.replicate_commands then redis.replicate_commands() end

local EVICT_BATCH = 8          -- expired entries removed per admitted call, at most (redisEvictBatch)
local TTL_MARGIN_MS = 300000   -- keys live this long past the last moment an entry matters
local TTL_REFRESH_US = 120000000 -- PEXPIRE once per period of this length (see reserve)

local INF = 4503599627370496  -- 2^52 µs (year 2112): "no such moment yet"

local COUNTER_SUFFIX = ':counter' -- a counter bucket's key: its log's key and this (CounterKeySuffix)

local NO_MIDNIGHT = 'ERR trendfetch: the Pacific midnight table does not cover Redis TIME (client clock off by a day or more?)'

local function fmt(x) return string.format('%d', x) end

-- clock_us(): Redis TIME in Unix µs (the only clock a decision reads)
local function clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- midnights(now): last Pacific midnight <= now, first one > now, from the
-- table in ARGV[1] (Unix µs, ascending, packed doubles: redisPack); nil
-- when the table does not cover now (the caller answers NO_MIDNIGHT). Its
-- second and third entries bracket the client's own day, the usual answer,
-- so they are tried first.
local function midnights(now)
  local t = ARGV[1]
  local count = #t / 8
  if count >= 3 then
    local last, nxt = struct.unpack('<dd', t, 9)
    if last <= now and now < nxt then return last, nxt end
  end
  local last, nxt = nil, nil
  for i = 0, count - 1 do
    local m = struct.unpack('<d', t, 1 + 8 * i)
    if m <= now then last = m elseif nxt == nil then nxt = m end
  end
  return last, nxt
end

-- window_start(now, window, last_mid): the first µs of a bucket's window
-- at now: now - window + 1 (sliding), or the last Pacific midnight
-- (window 0: calendar mode)
local function window_start(now, window, last_mid)
  if window == 0 then return last_mid end
  return now - window + 1
end

-- member "<cum, 16 digits>:<cost>" -> cum, cost
local function parse(m)
  return tonumber(string.sub(m, 1, 16)), tonumber(string.sub(m, 18))
end

-- retry_us(key, lo, now, window, next_mid, newest, need): µs until the entry
-- whose cum first reaches need (> base) leaves the window. window == 0:
-- calendar. When the log holds no such entry (it lost entries the state
-- hash still counts), every counted entry leaves by newest + window.
local function retry_us(key, lo, now, window, next_mid, newest, need)
  if window == 0 then return next_mid - now end
  local a = redis.call('ZCOUNT', key, '-inf', '(' .. fmt(lo))
  local b = redis.call('ZCARD', key) - 1
  while a < b do
    local mid = math.floor((a + b) / 2)
    local e = redis.call('ZRANGE', key, mid, mid)
    if parse(e[1]) >= need then b = mid else a = mid + 1 end
  end
  local r = newest + window - now
  local e = redis.call('ZRANGE', key, a, a, 'WITHSCORES')
  if e[1] and parse(e[1]) >= need then r = tonumber(e[2]) + window - now end
  if r < 1 then r = 1 end
  return r
end
`

// scriptFrame starts the KEYS and ARGV of the reserve, status and refund
// scripts for n buckets taking perBucket ARGV values each: KEYS[1] is the
// credential's state hash, ARGV[1] the Pacific midnights (Unix µs, packed
// by redisPack); the caller appends the buckets.
func (r *RedisBackend) scriptFrame(credential string, n, perBucket int) (keys []string, args []any) {
	keys = make([]string, 1, 1+n)
	keys[0] = r.stateKey(credential)
	args = make([]any, 0, 1+perBucket*n)
	mids := r.midnights(time.Now())
	p := r.packedMidnights.Load()
	if p == nil || !slices.Equal(p.table, mids) {
		p = &packedMidnights{table: slices.Clone(mids), arg: redisPack(mids...)}
		r.packedMidnights.Store(p)
	}
	args = append(args, p.arg)
	return keys, args
}

// packedMidnights is a midnight table and its ARGV[1] (redisPack, boxed
// once).
type packedMidnights struct {
	table []int64
	arg   any
}

// redisPack encodes the integers vs for a script's ARGV as little-endian
// doubles, 8 bytes each, that Lua reads with
// struct.unpack('<d...'): one ARGV and one unpack instead of a decimal
// string and a tonumber per value, the largest share of a decision's
// server time after its redis.calls (issue 13). Every value the scripts
// take (Unix µs, units, µs windows, slots) is below 2^53, where a double
// is exact, as Lua's own numbers are.
func redisPack(vs ...int64) []byte {
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
	}
	return b
}

// redisWindowUS is the bucket's window in µs as passed to the scripts; 0 means calendar mode.
func redisWindowUS(b Bucket) int64 {
	if b.Calendar {
		return 0
	}
	return b.Window.Microseconds()
}

// redisMidnightTable returns the Pacific midnights (America/Los_Angeles,
// embedded tzdata) that start the day before now's Pacific date, that date,
// and the two days after, as Unix µs, ascending. The scripts pick the last
// one <= Redis TIME and the next one after it, so Redis, not this clock,
// decides; the table covers a client clock up to a day off either way. Days
// are 23 or 25 hours long across DST changes.
//
// The table is the same for every decision of a Pacific day, so it is
// computed once per day (time.Date in a location costs about a µs a call)
// and shared: a decision reads it with one atomic load.
func redisMidnightTable(now time.Time) []int64 {
	us := now.UnixMicro()
	if t := midnightCache.Load(); t != nil && us >= t[1] && us < t[2] {
		return t[:]
	}
	p := PacificMidnight(now).In(pacific)
	var t [4]int64
	for d := -1; d <= 2; d++ {
		t[d+1] = time.Date(p.Year(), p.Month(), p.Day()+d, 0, 0, 0, 0, pacific).UnixMicro()
	}
	midnightCache.Store(&t)
	return t[:]
}

// midnightCache holds the last midnight table (see redisMidnightTable).
var midnightCache atomic.Pointer[[4]int64]

// redisOnceScript is a script that must not run twice for one call: the
// reserve (it would charge twice) and the refund (a counter bucket would be
// given its units back twice). RunOnce runs it like Script.Run (EVALSHA,
// then EVAL on NOSCRIPT) but as commands go-redis never sends a second time
// (redisOnceCmd), because a command whose reply was lost (read timeout,
// connection reset) may have run; it is sent again, once and after
// redisResendPause, only when the error proves it did not run
// (redisDidNotRun).
type redisOnceScript struct {
	*redis.Script
	src string
}

// redisResendPause is how long RunOnce waits before sending a command that
// did not run again (time for a failover client to find the new master).
const redisResendPause = 25 * time.Millisecond

func newRedisOnceScript(src string) redisOnceScript {
	return redisOnceScript{Script: redis.NewScript(src), src: src}
}

// RunOnce runs s on c (the backend's client or, with wait_replicas, one
// connection); the reply or go-redis's error is in the returned command.
func (s redisOnceScript) RunOnce(ctx context.Context, c redisProcessor, keys []string, args ...any) *redis.Cmd {
	var cmd redisOnceCmd
	for attempt := 0; ; attempt++ {
		cmd = redisOnce(ctx, "evalsha", s.Hash(), keys, args)
		err := c.Process(ctx, cmd)
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmd = redisOnce(ctx, "eval", s.src, keys, args)
			err = c.Process(ctx, cmd)
		}
		if err == nil || attempt == 1 || !redisDidNotRun(err) {
			return cmd.Cmd
		}
		select {
		case <-ctx.Done():
			return cmd.Cmd
		case <-time.After(redisResendPause):
		}
	}
}

// redisProcessor runs one command: a redis.UniversalClient or a *redis.Conn.
type redisProcessor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// redisOnceCmd is a command go-redis must not retry (Cmder.NoRetry): it
// fails with the first attempt's error instead of being sent again.
type redisOnceCmd struct{ *redis.Cmd }

// NoRetry implements redis.Cmder: always true.
func (redisOnceCmd) NoRetry() bool { return true }

// redisOnce builds "<name> <script> <numkeys> keys... args..." (EVALSHA
// or EVAL) as a redisOnceCmd.
func redisOnce(ctx context.Context, name, script string, keys []string, args []any) redisOnceCmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return redisOnceCmd{redis.NewCmd(ctx, append(a, args...)...)}
}

// redisDidNotRun reports whether err proves that a command never ran: the
// connection could not be made or was refused (maxclients), or Redis
// refused the command, or the script's first write, before anything was
// written: READONLY (a replica, e.g. the old master after a failover),
// LOADING (loading its data), MASTERDOWN (a replica without its master),
// CLUSTERDOWN and TRYAGAIN (Cluster), NOREPLICAS (min-replicas-to-write).
// The same replies go-redis retries other commands on.
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

// redisReserveScript decides one reservation across every bucket a call charges.
//
//	KEYS[1]      state hash         trendfetch:{<credential>}:state
//	KEYS[1+i]    bucket i's log     trendfetch:{<credential>}:<bucket>, i = 1..n
//	             (a counter bucket's counters: trendfetch:{<credential>}:<bucket>:counter)
//	ARGV[1]      Pacific midnights, Unix µs, ascending (packed, redisPack)
//	ARGV[1+i]    bucket i's name (its field in the state hash)
//	ARGV[1+n+i]  bucket i's cost (units > 0), limit (units), window (µs; 0 =
//	             calendar) and slots (a counter bucket's counters,
//	             redis_counter.go; 0 = a log), packed (redisPack)
//
// Reply (array of integers):
//
//	[1] allowed (1/0)   [2] now (Redis TIME, Unix µs)
//	[3] denying bucket index 1..n, 0 when allowed or denied only by the marker
//	[4] Retry-After µs (0 when allowed)   [5] exhausted until (Unix µs, 0 if not marked)
//	[5+i] remaining units of bucket i after the decision (on denial: limit - used,
//	      as nothing was recorded)
//	[5+n+i] score of the entry recorded in bucket i (Unix µs; 0 on denial): with
//	      the cost, its identity for Refund (a counter bucket: now, the moment
//	      whose counter Refund takes the units back from)
var redisReserveScript = newRedisOnceScript(redisLuaPrelude + redisLuaCounter + `
-- One pass reads, decides and, while every bucket so far fits, records:
-- the hot path makes four redis.calls (TIME, HMGET, ZADD, HSET) plus one
-- ZADD per extra bucket and builds no table per log bucket (a table per
-- bucket cost ~0.8 µs of server time, about what a redis.call costs; a
-- second pass that decoded every bucket again cost ~0.5 µs for two). When
-- a bucket denies after earlier log buckets recorded their entries, undo
-- removes those entries again (ZREM of the exact member) before the script
-- returns, so no client ever sees them;
-- what stays is only what an admission does for housekeeping (expired
-- entries evicted, a TTL refreshed). Counter buckets are written after the
-- pass, once the call is admitted. A log bucket's state before the call
-- stays in its cache string got[1 + i] (re-packed when its split moved or
-- it was rebuilt), which log_state decodes for undo and the denial reply.
local n = #KEYS - 1
local NAMES = 2      -- ARGV index of bucket 1's name; bucket i's is NAMES + i - 1
local PARAMS = n + 2 -- ARGV index of bucket 1's packed values; bucket i's is PARAMS + i - 1
local now = clock_us()
local last_mid, next_mid = midnights(now)
if last_mid == nil or next_mid == nil then return redis.error_reply(NO_MIDNIGHT) end

-- got[1] is the exhaustion marker, got[1 + i] bucket i's cache
local got = redis.call('HMGET', KEYS[1], 'exhausted', unpack(ARGV, NAMES, NAMES + n - 1))
local ex_until = tonumber(got[1]) or 0
if ex_until <= now then ex_until = 0 end

-- log_state(i) -> key, cost, limit, window, lo, total, newest, split_lo,
-- split_cum, split_next, oldest of log bucket i before this call (lo: the
-- first µs of its window)
local function log_state(i)
  local cost, limit, window = struct.unpack('<ddd', ARGV[PARAMS + i - 1])
  local lo = window_start(now, window, last_mid)
  return KEYS[i + 1], cost, limit, window, lo, struct.unpack('<dddddd', got[i + 1])
end

-- A counter bucket's read is kept in counters[i] (u, span, c, r, own,
-- slots, has_g from C.read; used, the estimate; over, it denies).
local C        -- counter helpers, built at the first counter bucket
local counters -- built at the first counter bucket

-- undo(m): remove the entries log buckets 1..m recorded in this pass
local function undo(m)
  for i = 1, m do
    if not (counters and counters[i]) then
      local key, cost, _, _, _, total = log_state(i)
      redis.call('ZREM', key, string.format('%016d:%d', total + cost, cost))
    end
  end
end

local allowed = (ex_until == 0)
local reply = {1, now, 0, 0, 0}
local hset = {} -- HSET arguments of the state hash
local period_start = now - now % TTL_REFRESH_US -- the TTL refresh period now is in
local later -- key, entries to evict, TTL ms (0: none) per log bucket that needs either
local state_ttl = 0
for i = 1, n do
  local key = KEYS[i + 1]
  local cost, limit, window, slots = struct.unpack('<dddd', ARGV[PARAMS + i - 1])
  local fits
  if slots > 0 then
    C, counters = C or counter_lib(), counters or {}
    -- a field in the state hash is a log's cache: the bucket was a log
    -- since the counters' last admission (switch.go)
    local log_key
    if got[i + 1] then log_key = string.sub(key, 1, -#COUNTER_SUFFIX - 1) end
    local u, span, c, r, own, convert, has_g = C.read(key, now, window, slots, log_key)
    if convert then C.convert(key, log_key, u, span, c, slots, window) end
    if got[i + 1] then redis.call('HDEL', KEYS[1], ARGV[NAMES + i - 1]) end
    local full, w, used = C.estimate(u, slots, span, r)
    fits = not (w > limit - full - cost)
    counters[i] = {u = u, span = span, c = c, r = r, own = own, slots = slots, used = used, over = not fits,
      has_g = has_g or convert}
    if fits then
      local left = limit - used - cost
      if left < 0 then left = 0 end
      reply[5 + i], reply[5 + n + i] = left, now
    end
  else
    -- read the bucket (from its cache; the log only when the cache cannot
    -- answer) and decide
    local lo = window_start(now, window, last_mid)
    local total, newest, slo, scum, snext, oldest
    local moved = false   -- got[1 + i] must be re-packed
    local rebuilt = false -- the cache was rebuilt from the log
    local c = got[i + 1]
    if c and #c == 48 then
      total, newest, slo, scum, snext, oldest = struct.unpack('<dddddd', c)
    else
      -- no cache: rebuild it from the log, forcing the split search below,
      -- once the bucket's counters, if it had that form, are appended to
      -- the log (switch.go); its field then says so until the cache is
      -- written (a counter decision looks at the log when the field is set)
      C = C or counter_lib()
      local keep = window
      if next_mid - now > keep then keep = next_mid - now end
      keep = math.floor(keep / 1000) + 1 + TTL_MARGIN_MS
      if C.to_log(key, key .. COUNTER_SUFFIX, now, keep) then
        redis.call('HSET', KEYS[1], ARGV[NAMES + i - 1], 'log')
        if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
      end
      rebuilt, moved = true, true
      total, newest, slo, scum, snext, oldest = 0, 0, INF, 0, 0, INF
      local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      if last[1] then
        total, newest, oldest = parse(last[1]), tonumber(last[2]), 0
      end
    end
    if slo <= lo and (total == scum or snext >= lo) then
      -- the split still holds: nothing left the window since
    elseif newest < lo then
      scum, slo, moved = total, lo, true -- everything left the window
    else
      local first = redis.call('ZRANGEBYSCORE', key, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      if first[1] then
        local cum, fc = parse(first[1])
        scum, snext, slo = cum - fc, tonumber(first[2]), lo
      else
        scum, slo = total, lo -- the log lost its entries (deleted, evicted): trust it
      end
      moved = true
    end
    if moved then got[i + 1] = struct.pack('<dddddd', total, newest, slo, scum, snext, oldest) end
    fits = total - scum + cost <= limit
    if fits and allowed then
      -- record the entry and its cache; bounded eviction of entries that
      -- matter neither to the window nor to today, and (now and then) a
      -- TTL, are housekeeping left for after the decision (later)
      local cutoff = lo
      if last_mid < cutoff then cutoff = last_mid end
      local refresh = rebuilt or newest > now or newest < last_mid or newest < period_start
      local evict = 0
      if oldest < cutoff then
        local expired = redis.call('ZCOUNT', key, '-inf', '(' .. fmt(cutoff))
        if expired > 0 then
          evict = math.min(expired, EVICT_BATCH)
          if newest < cutoff then refresh = true end
        end
        if expired <= EVICT_BATCH then
          -- every entry before cutoff will be gone; the first one left is the
          -- split's next entry when cutoff is the window's start, else at
          -- least cutoff
          oldest = cutoff
          if cutoff == lo and total > scum then oldest = snext end
        end
      end
      local score = now
      if newest >= score then score = newest + 1 end -- unique: a refund's handle
      if total == scum then snext = score end -- the new entry is the first after the split
      if oldest > score then oldest = score end
      redis.call('ZADD', key, score, string.format('%016d:%d', total + cost, cost))
      hset[#hset + 1] = ARGV[NAMES + i - 1]
      hset[#hset + 1] = struct.pack('<dddddd', total + cost, score, slo, scum, snext, oldest)
      -- TTL: the key must outlive its newest entry's window and today (for
      -- UsedToday). The first write of each TTL_REFRESH_US period and of each
      -- Pacific day sets it (and any write after eviction, a clock step back or
      -- a rebuilt cache), so the TTL was set at most TTL_REFRESH_US ago and
      -- still covers that with TTL_MARGIN_MS - TTL_REFRESH_US to spare; later
      -- writes skip PEXPIRE. The state hash gets the longest such TTL (and at
      -- least the marker's); were it to expire first, its caches are rebuilt.
      local ttl = 0
      if refresh then
        local keep = window
        if next_mid - now > keep then keep = next_mid - now end
        ttl = math.floor(keep / 1000) + 1 + TTL_MARGIN_MS
        if ttl > state_ttl then state_ttl = ttl end
      end
      if evict > 0 or ttl > 0 then
        later = later or {}
        later[#later + 1], later[#later + 2], later[#later + 3] = key, evict, ttl
      end
      reply[5 + i] = limit - (total - scum) - cost -- >= 0: it fits
      reply[5 + n + i] = score
    end
  end
  if not fits and allowed then
    undo(i - 1)
    allowed = false
  end
end

if not allowed then
  -- Retry-After is the largest wait of the buckets that deny; every
  -- bucket reports limit - used (at least 0)
  local retry, denied, denied_retry = 0, 0, 0
  if ex_until > 0 then retry = ex_until - now end
  reply = {0, now, 0, 0, ex_until}
  for i = 1, n do
    local left, r -- limit - used; Retry-After µs when bucket i denies
    local k = counters and counters[i]
    if k then
      local cost, limit = struct.unpack('<dd', ARGV[PARAMS + i - 1])
      left = limit - k.used
      if k.over then r = C.retry(k.u, k.slots, k.span, k.r, limit, cost) end
    else
      local key, cost, limit, window, lo, total, newest, _, scum = log_state(i)
      left = limit - (total - scum)
      if left < cost then r = retry_us(key, lo, now, window, next_mid, newest, total + cost - limit) end
    end
    if r then
      if denied == 0 or r > denied_retry then denied, denied_retry = i, r end
      if r > retry then retry = r end
    end
    if left < 0 then left = 0 end
    reply[5 + i] = left
    reply[5 + n + i] = 0
  end
  reply[3], reply[4] = denied, retry
  return reply
end

-- admitted: the housekeeping of the log buckets, then the counter
-- buckets' current counters grow by their cost
if later then
  for j = 1, #later, 3 do
    local key, evict, ttl = later[j], later[j + 1], later[j + 2]
    if evict > 0 then redis.call('ZREMRANGEBYRANK', key, 0, evict - 1) end
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  end
end
if counters then
  for i, k in pairs(counters) do
    local cost, _, window = struct.unpack('<ddd', ARGV[PARAMS + i - 1])
    C.add(KEYS[i + 1], k.slots, k.span, k.c, k.own + cost, window, k.has_g)
  end
end
if #hset > 0 then redis.call('HSET', KEYS[1], unpack(hset)) end
if state_ttl > 0 then
  local ex_ttl = math.floor((ex_until - now) / 1000) + 1
  if ex_ttl > state_ttl then state_ttl = ex_ttl end
  redis.call('PEXPIRE', KEYS[1], state_ttl)
end
return reply
`)

// Reserve admits the call only if every charge fits its bucket, recording one
// entry per bucket, or none (see Backend). It runs redisReserveScript: one round
// trip, O(log n) in the bucket's entries, independent of the cost weight.
// A charge above its bucket's limit is a *CostError returned before any Redis
// call; a reserved bucket name (ReservedBucketName), a duplicate bucket or a
// bad credential name is an error too. Redis failures wrap ErrUnavailable.
// With WithRedisWaitReplicas, an admission is confirmed by WAIT on the same
// connection (a second round trip) or fails with ErrNotReplicated.
func (r *RedisBackend) Reserve(ctx context.Context, credential string, charges []BucketCharge) (Decision, error) {
	if err := redisCheckCredential(credential); err != nil {
		return Decision{}, err
	}
	if len(charges) == 0 {
		return Decision{}, errors.New("quota: reservation without charges")
	}
	keys, args := r.scriptFrame(credential, len(charges), 2)
	for i, c := range charges {
		if err := redisCheckBucket(c.Bucket, i, func(j int) string { return charges[j].Name }); err != nil {
			return Decision{}, err
		}
		if c.Units <= 0 {
			return Decision{}, fmt.Errorf("quota: charge of %d units in bucket %q; must be > 0", c.Units, c.Name)
		}
		if c.Units > c.Limit {
			return Decision{}, &CostError{Bucket: c.Name, Units: c.Units, Limit: c.Limit}
		}
		keys = append(keys, r.scriptBucketKey(credential, c.Bucket))
		args = append(args, c.Name)
	}
	for _, c := range charges {
		args = append(args, redisPack(c.Units, c.Limit, redisWindowUS(c.Bucket), int64(c.CounterSlots())))
	}
	// With wait_replicas, the script and WAIT share one connection.
	var conn *redis.Conn
	var runner redisProcessor = r.client
	if r.waitReplicas > 0 {
		var err error
		if conn, err = r.waitConn(ctx, credential); err != nil {
			return Decision{}, r.fail("reserve", credential, err)
		}
		defer conn.Close()
		runner = conn
	}
	res, err := redisReserveScript.RunOnce(ctx, runner, keys, args...).Int64Slice()
	if err != nil {
		return Decision{}, r.fail("reserve", credential, err)
	}
	if len(res) != 5+2*len(charges) {
		return Decision{}, r.fail("reserve", credential, fmt.Errorf("unexpected reply of %d values", len(res)))
	}
	d := Decision{
		Allowed:    res[0] == 1,
		Now:        time.UnixMicro(res[1]),
		RetryAfter: time.Duration(res[3]) * time.Microsecond,
		Remaining:  make(map[string]int64, len(charges)),
	}
	if res[2] > 0 {
		d.DeniedBucket = charges[res[2]-1].Name
	}
	if res[4] > 0 {
		d.Exhausted = true
		d.ExhaustedUntil = time.UnixMicro(res[4])
	}
	if d.Allowed {
		d.Reservation = redisReservation(charges, res[5+len(charges):])
	}
	for i, c := range charges {
		d.Remaining[c.Name] = res[5+i]
	}
	if d.Allowed && conn != nil {
		if err := r.waitReplicated(ctx, conn, credential); err != nil {
			return Decision{}, err
		}
	}
	return d, nil
}

// redisStatusScript reads every bucket of a credential without writing anything
// (no admission, no eviction, no PEXPIRE).
//
//	KEYS[1]      state hash         trendfetch:{<credential>}:state (only its marker is read)
//	KEYS[1+i]    bucket i's log, i = 1..n (a counter bucket's counters)
//	ARGV[1]      Pacific midnights, Unix µs, ascending (packed, redisPack)
//	ARGV[1+i]    bucket i's limit (units), window (µs; 0 = calendar), max
//	             cost (units; 0 = none) and slots (a counter bucket's
//	             counters; 0 = a log), packed (redisPack)
//
// Reply (array of integers): [1] now (Unix µs), [2] exhausted until (Unix µs, 0 if
// not marked), then per bucket 6 values: used, entries in window, oldest entry in
// window (Unix µs, 0 if none), Retry-After µs for cost 1, Retry-After µs for the max
// cost (0 = fits now), units since the last Pacific midnight. A counter bucket's
// used is its estimate rounded up, its entries and oldest 0, its Retry-After
// figures the estimate's, and its units since midnight those of the counters
// that began at or after it (counterStatus).
var redisStatusScript = redis.NewScript(redisLuaPrelude + redisLuaCounter + `
-- state(key, lo) -> total, base, newest score, oldest score (both nil if empty);
-- used = total - base. When the oldest entry is inside the window (the steady
-- state: eviction keeps up) it is the first one, and no range query is needed.
local function state(key, lo)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #last == 0 then return 0, 0, nil, nil end
  local total = parse(last[1])
  local newest = tonumber(last[2])
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local oldest = tonumber(first[2])
  if newest < lo then return total, total, newest, oldest end
  if oldest < lo then
    first = redis.call('ZRANGEBYSCORE', key, fmt(lo), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  end
  local cum, cost = parse(first[1])
  return total, cum - cost, newest, oldest
end

local n = #KEYS - 1
local now = clock_us()
local last_mid, next_mid = midnights(now)
if last_mid == nil or next_mid == nil then return redis.error_reply(NO_MIDNIGHT) end

local ex_until = 0
local ex = redis.call('HGET', KEYS[1], 'exhausted')
if ex then
  ex_until = tonumber(ex)
  if ex_until <= now then ex_until = 0 end
end
local reply = {now, ex_until}
local C -- counter helpers, built at the first counter bucket
for i = 1, n do
  local limit, window, maxcost, slots = struct.unpack('<dddd', ARGV[1 + i])
  local key = KEYS[i + 1]
  if slots > 0 then
    C = C or counter_lib()
    -- with the bucket's old form folded in, as the reserve script would
    local u, span, c, r = C.read(key, now, window, slots, string.sub(key, 1, -#COUNTER_SUFFIX - 1))
    local full, w, used = C.estimate(u, slots, span, r)
    local r1, rmax, today = 0, 0, 0
    if w > limit - full - 1 then r1 = C.retry(u, slots, span, r, limit, 1) end
    if maxcost > 0 and maxcost <= limit and w > limit - full - maxcost then
      rmax = C.retry(u, slots, span, r, limit, maxcost)
    end
    for j = 1, slots do
      if (c - slots + j) * span >= last_mid then today = today + u[j] end
    end
    local k = #reply
    reply[k + 1], reply[k + 2], reply[k + 3] = used, 0, 0
    reply[k + 4], reply[k + 5], reply[k + 6] = r1, rmax, today
  else
    local lo = window_start(now, window, last_mid)
    local total, base, newest = state(key, lo)
    local used = total - base
    local entries, oldest = 0, 0
    if used > 0 then
      entries = redis.call('ZCOUNT', key, fmt(lo), '+inf')
      local first = redis.call('ZRANGEBYSCORE', key, fmt(lo), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      oldest = tonumber(first[2])
    end
    local ttotal, tbase = state(key, last_mid)
    local today = ttotal - tbase
    -- the bucket's counters, if it had that form, appended to the log
    -- after its newest entry, as the reserve script would (switch.go)
    C = C or counter_lib()
    local chunks, after = C.chunks(key .. COUNTER_SUFFIX, now), newest or 0
    for _, ch in ipairs(chunks) do
      if ch[1] <= after then ch[1] = after + 1 end
      after = ch[1]
      if ch[1] >= lo then
        used, entries = used + ch[2], entries + 1
        if oldest == 0 then oldest = ch[1] end
      end
      if ch[1] >= last_mid then today = today + ch[2] end
    end
    -- retry(need): Retry-After µs until the units up to cum need have left
    -- (need > total: some of the chunks must leave too)
    local function retry(need)
      if need <= total then return retry_us(key, lo, now, window, next_mid, newest, need) end
      if window == 0 then return next_mid - now end
      local cum = total
      for _, ch in ipairs(chunks) do
        if ch[1] >= lo then
          cum = cum + ch[2]
          if cum >= need then return ch[1] + window - now end
        end
      end
      return math.max(after + window - now, 1) -- need is above every unit counted
    end
    local r1, rmax = 0, 0
    if used + 1 > limit then r1 = retry(base + used + 1 - limit) end
    if maxcost > 0 and used + maxcost > limit then rmax = retry(base + used + maxcost - limit) end
    local k = #reply
    reply[k + 1], reply[k + 2], reply[k + 3] = used, entries, oldest
    reply[k + 4], reply[k + 5], reply[k + 6] = r1, rmax, today
  end
end
return reply
`)

// Status reads every bucket of credential with redisStatusScript, which writes
// nothing (no admission, eviction or PEXPIRE). Now is Redis TIME; UsedToday
// counts units since the last Pacific midnight; Retry-After figures assume
// no other reservation happens meanwhile. Redis failures wrap ErrUnavailable.
func (r *RedisBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error) {
	st := Status{Credential: credential, Backend: r.Name()}
	if err := redisCheckCredential(credential); err != nil {
		return st, err
	}
	keys, args := r.scriptFrame(credential, len(buckets), 1)
	for i, b := range buckets {
		if err := redisCheckBucket(b, i, func(j int) string { return buckets[j].Name }); err != nil {
			return st, err
		}
		keys = append(keys, r.scriptBucketKey(credential, b))
		args = append(args, redisPack(b.Limit, redisWindowUS(b), maxCost[b.Name], int64(b.CounterSlots())))
	}
	start := time.Now()
	res, err := redisStatusScript.Run(ctx, r.client, keys, args...).Int64Slice()
	st.Latency = time.Since(start)
	if err != nil {
		st.Err = err.Error()
		return st, r.fail("status", credential, err)
	}
	if len(res) != 2+6*len(buckets) {
		err := fmt.Errorf("unexpected reply of %d values", len(res))
		st.Err = err.Error()
		return st, r.fail("status", credential, err)
	}
	st.Reachable = true
	st.Now = time.UnixMicro(res[0])
	if res[1] > 0 {
		st.ExhaustedUntil = time.UnixMicro(res[1])
	}
	for i, b := range buckets {
		v := res[2+6*i : 8+6*i]
		bs := BucketStatus{
			Bucket:        b,
			Used:          v[0],
			Remaining:     max(b.Limit-v[0], 0),
			Entries:       v[1],
			RetryAfterOne: time.Duration(v[3]) * time.Microsecond,
			MaxCost:       maxCost[b.Name],
			RetryAfterMax: time.Duration(v[4]) * time.Microsecond,
			UsedToday:     v[5],
		}
		if v[2] > 0 {
			bs.Oldest = time.UnixMicro(v[2])
		}
		st.Buckets = append(st.Buckets, bs)
	}
	return st, nil
}

// redisMarkScript sets the exhaustion marker (field "exhausted" of the state
// hash), never shortening an existing one, and makes the hash live at least
// until then.
//
//	KEYS[1] trendfetch:{<credential>}:state
//	ARGV[1] until, Unix µs
//
// Reply: the marker's until after the call, Unix µs.
var redisMarkScript = redis.NewScript(`
local till = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'exhausted'))
if cur and cur >= till then return cur end
local t = redis.call('TIME')
local ttl = math.floor((till - (tonumber(t[1]) * 1000000 + tonumber(t[2]))) / 1000) + 1
if ttl <= 1 then return till end -- already over: nothing to mark
redis.call('HSET', KEYS[1], 'exhausted', ARGV[1])
local pttl = redis.call('PTTL', KEYS[1])
if pttl < 0 or ttl > pttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return till
`)

// MarkExhausted sets the credential's exhaustion marker until until (field
// "exhausted" of the state hash, which lives at least that long); every
// Reserve is denied with Exhausted and a Retry-After up to until meanwhile.
// A marker is never shortened by a later call with an earlier until, and an
// until already past marks nothing. Redis failures wrap ErrUnavailable.
func (r *RedisBackend) MarkExhausted(ctx context.Context, credential string, until time.Time) error {
	if err := redisCheckCredential(credential); err != nil {
		return err
	}
	err := redisMarkScript.Run(ctx, r.client, []string{r.stateKey(credential)}, until.UnixMicro()).Err()
	if err != nil {
		return r.fail("mark exhausted", credential, err)
	}
	return nil
}

// redisRefundScript removes the entries of one reservation (Refund), each
// from its bucket's log, and keeps the bucket's cache in the state hash
// exact. An entry is matched by its score and cost (scores are unique within
// a bucket, see the data layout above); one not found (already refunded,
// evicted, reset) or no longer in its window at Redis TIME is skipped. Every
// entry after a removed one gets the member "<cum - cost>:<its cost>" at the
// same score, so the prefix sums stay exact; the cache's total (and its
// split, when the removed entry was at or before it) drops by the cost, and
// its newest stays: a score is never issued twice.
//
//	KEYS[1]      state hash         trendfetch:{<credential>}:state
//	KEYS[1+i]    bucket i's log     trendfetch:{<credential>}:<bucket>, i = 1..n
//	ARGV[1]      Pacific midnights, Unix µs, ascending (packed, redisPack)
//	ARGV[2i]     bucket i's field in the state hash (the bucket name)
//	ARGV[2i+1]   the entry's score (Unix µs), its cost (units), the
//	             bucket's window (µs; 0 = calendar) and slots (0 = a log;
//	             a counter bucket's KEYS[1+i] is its counters, and the units
//	             go back to the counter holding score, if it is still kept
//	             and score still in the window), packed (redisPack)
//
// Reply (array of integers): [1] now (Redis TIME, Unix µs), [1+i] 1 when
// bucket i's entry was removed, else 0.
//
// Cost: O(log n) per bucket plus O(log n) per entry recorded after the
// removed one (each is rewritten); a refund follows its reservation within
// one request's dial time, so few.
var redisRefundScript = newRedisOnceScript(redisLuaPrelude + redisLuaCounter + `
local REWRITE_BATCH = 500 -- members per ZREM/ZADD call (unpack's stack limit)
local n = #KEYS - 1
local now = clock_us()
local last_mid, next_mid = midnights(now)
if last_mid == nil or next_mid == nil then return redis.error_reply(NO_MIDNIGHT) end

local reply = {now}
for i = 1, n do
  local field = ARGV[2 * i]
  local score, cost, window, slots = struct.unpack('<dddd', ARGV[2 * i + 1])
  local key = KEYS[i + 1]
  if slots > 0 then
    -- a counter bucket: the units go back to the counter of score, if it
    -- is still kept and score still in the window
    reply[i + 1] = 0
    if score > now - window then
      local span = window / (slots - 1)
      local j = math.floor(score / span)
      local v = redis.call('HGET', key, j % slots)
      if v and #v == 16 then
        local sj, su = struct.unpack('<dd', v)
        if sj == j then
          su = su - cost
          if su < 0 then su = 0 end
          redis.call('HSET', key, j % slots, struct.pack('<dd', sj, su))
          reply[i + 1] = 1
        end
      end
    end
  else
    local lo = window_start(now, window, last_mid)
    local member, cum
    if score >= lo then
      for _, e in ipairs(redis.call('ZRANGEBYSCORE', key, fmt(score), fmt(score))) do
        local c, k = parse(e)
        if k == cost then member, cum = e, c break end
      end
    end
    reply[i + 1] = 0
    if member then
      local ttl = redis.call('PTTL', key)
      local later = redis.call('ZRANGE', key, redis.call('ZRANK', key, member) + 1, -1, 'WITHSCORES')
      -- Remove the entry and every later one, then add the later ones back
      -- with their cum lowered (a new member may equal an old one's).
      local old, new = {member}, {}
      for j = 1, #later, 2 do
        local c, k = parse(later[j])
        old[#old + 1] = later[j]
        new[#new + 1] = later[j + 1]
        new[#new + 1] = string.format('%016d:%d', c - cost, k)
      end
      for j = 1, #old, REWRITE_BATCH do
        redis.call('ZREM', key, unpack(old, j, math.min(j + REWRITE_BATCH - 1, #old)))
      end
      for j = 1, #new, 2 * REWRITE_BATCH do
        redis.call('ZADD', key, unpack(new, j, math.min(j + 2 * REWRITE_BATCH - 1, #new)))
      end
      -- The ZREM may have emptied (deleted) the key: the re-added entries
      -- keep the TTL it had.
      if #new > 0 and ttl > 0 then redis.call('PEXPIRE', key, ttl) end
      local c = redis.call('HGET', KEYS[1], field)
      if c and #c == 48 then
        local total, newest, slo, scum, snext, oldest = struct.unpack('<dddddd', c)
        total = total - cost
        if cum <= scum then
          scum = scum - cost -- the entry was before the split (a split the
                             -- reserve script would recompute anyway)
        elseif cum - cost == scum and #later > 0 then
          snext = tonumber(later[2]) -- it was the first entry after the split
        end
        redis.call('HSET', KEYS[1], field, struct.pack('<dddddd', total, newest, slo, scum, snext, oldest))
      end
      reply[i + 1] = 1
    end
  end
end
return reply
`)

// Refund implements Backend with redisRefundScript: one round trip, atomic
// across every bucket of r. Entries already refunded, evicted or reset, and
// entries no longer in their window at Redis TIME, are skipped. A bad
// credential name is an error; Redis failures wrap ErrUnavailable. After a
// failure that may have reached Redis (a lost reply), r's counter buckets
// are not refunded again by a later call: their units may already be back.
func (r *RedisBackend) Refund(ctx context.Context, credential string, res Reservation) error {
	if err := redisCheckCredential(credential); err != nil {
		return err
	}
	if res.IsZero() {
		return nil
	}
	claimed, release := res.claimRefund()
	if !claimed {
		return nil // a counter's units were given back already (claimRefund)
	}
	keys, args := r.scriptFrame(credential, len(res.entries), 2)
	for _, e := range res.entries {
		keys = append(keys, r.scriptBucketKey(credential, e.bucket))
		args = append(args, e.bucket.Name, redisPack(e.at, e.units, redisWindowUS(e.bucket), int64(e.bucket.CounterSlots())))
	}
	out, err := redisRefundScript.RunOnce(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		if redisDidNotRun(err) {
			release() // it may be tried again; one that may have run may not
		}
		return r.fail("refund", credential, err)
	}
	if len(out) != 1+len(res.entries) {
		return r.fail("refund", credential, fmt.Errorf("unexpected reply of %d values", len(out)))
	}
	return nil
}

// redisReservation is the Reservation of an admitted reserve script reply:
// scores[i] is the score of the entry recorded for charges[i] (reply
// values [5+n+i]).
func redisReservation(charges []BucketCharge, scores []int64) Reservation {
	res := Reservation{refunded: newCounterMark(charges)}
	for i, c := range charges {
		res.entries = append(res.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: scores[i]})
	}
	return res
}
