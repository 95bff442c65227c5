package quota

import "github.com/redis/go-redis/v9"

// redisEvictBatch is EVICT_BATCH of the reserve script: the most expired
// entries one admitted call removes (a test checks both agree).
const redisEvictBatch = 8

// The Redis backend's Lua scripts. Each is declared once here, with the
// KEYS, ARGV and reply it takes, and run with go-redis Script.Run: EVALSHA,
// falling back to EVAL on NOSCRIPT (restart, failover, SCRIPT FLUSH).
//
// # Data layout (one bucket of one credential)
//
// Key trendfetch:{<credential>}:<bucket> is a sorted set with one entry per
// admitted call:
//
//	score  = Redis TIME in microseconds when the call was admitted
//	member = "<cum>:<cost>", cum zero-padded to 16 digits
//
// cum is the bucket's running total after this entry: the units ever
// admitted into the key up to and including this call (a prefix sum). It
// strictly increases, so members are unique even within one microsecond, and
// because scores never decrease (a new score is max(TIME, newest score)) the
// sorted-set order (score, then member bytes) is also cum order.
//
// # Algorithm (exact weighted sliding-window log, O(log n) per decision)
//
// A bucket's window at time now is [lo, now] with lo = now - window + 1 µs
// (sliding) or lo = the last Pacific midnight <= now (calendar mode).
//
//	total = cum of the newest entry                       ZRANGE key -1 -1      O(log n)
//	base  = cum - cost of the oldest entry with score>=lo ZRANGE key 0 0        O(1)
//	        (or, while expired entries remain,            ZRANGEBYSCORE LIMIT 1 O(log n))
//	used  = total - base  (0 when the newest entry is older than lo)
//
// so the in-window sum costs the same whatever the cost weights and however
// many entries expired since the last decision: removing expired entries is
// no longer needed to count, so eviction lags, at most redisEvictBatch entries
// per admitted call (ZREMRANGEBYRANK, O(log n + redisEvictBatch); removing one
// entry costs Redis about 0.7 µs, so the batch is small: a backlog of 9,000
// expired entries is cleared within 1,300 admitted calls while memory never
// grows, since each call adds one entry and removes up to 8); entries are kept
// back to the last Pacific midnight so that units-since-midnight (UsedToday)
// stays exact.
//
// A call is admitted when used + cost <= limit in every bucket it charges;
// then (and only then) every bucket gets ZADD + PEXPIRE. A denial writes
// nothing. Retry-After for a denied bucket: the call fits once the entries
// up to the first one whose cum >= need = total + cost - limit have left the
// window; that entry is found by binary search over ranks (ZRANGE i i, one
// O(log n) probe per step, only on denial: O(log² n)); it leaves the window
// at score + window, so RetryAfter = score + window - now µs (never early:
// an entry with score s is outside the window from now = s + window on). In
// calendar mode everything leaves at the next Pacific midnight. The decision
// reports the largest Retry-After among the denying buckets.
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

local NO_MIDNIGHT = 'ERR trendfetch: the Pacific midnight table does not cover Redis TIME (client clock off by a day or more?)'

local function fmt(x) return string.format('%d', x) end

-- member "<cum, 16 digits>:<cost>" -> cum, cost
local function parse(m)
  return tonumber(string.sub(m, 1, 16)), tonumber(string.sub(m, 18))
end

-- retry_us(key, lo, now, window, next_mid, total, need): µs until the entry whose
-- cum first reaches need (> base) leaves the window. window == 0: calendar.
local function retry_us(key, lo, now, window, next_mid, need)
  if window == 0 then return next_mid - now end
  local a = redis.call('ZCOUNT', key, '-inf', '(' .. fmt(lo))
  local b = redis.call('ZCARD', key) - 1
  while a < b do
    local mid = math.floor((a + b) / 2)
    local e = redis.call('ZRANGE', key, mid, mid)
    if parse(e[1]) >= need then b = mid else a = mid + 1 end
  end
  local e = redis.call('ZRANGE', key, a, a, 'WITHSCORES')
  local r = tonumber(e[2]) + window - now
  if r < 1 then r = 1 end
  return r
end

`

// redisReserveScript decides one reservation across every bucket a call charges.
//
//	KEYS[1]      exhaustion marker  trendfetch:{<credential>}:exhausted (value: until, Unix µs)
//	KEYS[1+i]    bucket i's log     trendfetch:{<credential>}:<bucket>, i = 1..n
//	ARGV[1]      m, the number of Pacific midnights that follow
//	ARGV[2..m+1] Pacific midnights, Unix µs, ascending
//	then per bucket i, 3 values: cost (units > 0), limit (units), window (µs; 0 = calendar)
//
// Reply (array of integers):
//
//	[1] allowed (1/0)   [2] now (Redis TIME, Unix µs)
//	[3] denying bucket index 1..n, 0 when allowed or denied only by the marker
//	[4] Retry-After µs (0 when allowed)   [5] exhausted until (Unix µs, 0 if not marked)
//	[5+i] remaining units of bucket i after the decision (on denial: limit - used,
//	      as nothing was recorded)
var redisReserveScript = redis.NewScript(redisLuaPrelude + `
-- The hot path is inlined: each redis.call and each Lua closure costs
-- about a microsecond, which is what the decision benchmarks measure.
local n = #KEYS - 1
local m = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last_mid, next_mid
for i = 2, m + 1 do
  local v = tonumber(ARGV[i])
  if v <= now then last_mid = v elseif next_mid == nil then next_mid = v end
end
if last_mid == nil or next_mid == nil then return redis.error_reply(NO_MIDNIGHT) end

local ex_until = 0
local ex = redis.call('GET', KEYS[1])
if ex then
  ex_until = tonumber(ex)
  if ex_until <= now then ex_until = 0 end
end

-- pass 1: read every bucket; st holds 8 values per bucket:
-- cost, window, lo, total, remaining, newest, oldest, over (1 when it does not fit)
local st = {}
local allowed = (ex_until == 0)
local p = m + 2
for i = 1, n do
  local cost, limit, window = tonumber(ARGV[p]), tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2])
  p = p + 3
  local key = KEYS[i + 1]
  local lo = now - window + 1
  if window == 0 then lo = last_mid end
  local total, used, newest, oldest = 0, 0, false, false
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[1] then
    total = tonumber(string.sub(last[1], 1, 16))
    newest = tonumber(last[2])
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    oldest = tonumber(first[2])
    if newest >= lo then
      if oldest < lo then
        first = redis.call('ZRANGEBYSCORE', key, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      end
      local cum, c = parse(first[1])
      used = total - cum + c
    end
  end
  local over = 0
  local rem = limit - used - cost
  if rem < 0 then
    over, allowed, rem = 1, false, limit - used
    if rem < 0 then rem = 0 end
  end
  local b = 8 * (i - 1)
  st[b + 1], st[b + 2], st[b + 3], st[b + 4] = cost, window, lo, total
  st[b + 5], st[b + 6], st[b + 7], st[b + 8] = rem, newest, oldest, over
end

if not allowed then
  -- nothing is recorded; Retry-After is the largest wait of the buckets that deny
  local retry, denied, denied_retry = 0, 0, 0
  if ex_until > 0 then retry = ex_until - now end
  local reply = {0, now, 0, 0, ex_until}
  for i = 1, n do
    local b = 8 * (i - 1)
    local rem = st[b + 5]
    if st[b + 8] == 1 then
      local limit = tonumber(ARGV[m + 3 + 3 * (i - 1)])
      local r = retry_us(KEYS[i + 1], st[b + 3], now, st[b + 2], next_mid, st[b + 4] + st[b + 1] - limit)
      if denied == 0 or r > denied_retry then denied, denied_retry = i, r end
      if r > retry then retry = r end
    else
      rem = rem + st[b + 1] -- this bucket would have fitted: limit - used
    end
    reply[5 + i] = rem
  end
  reply[3], reply[4] = denied, retry
  return reply
end

-- pass 2: record one entry in every bucket
local reply = {1, now, 0, 0, 0}
for i = 1, n do
  local b = 8 * (i - 1)
  local cost, window, lo, total = st[b + 1], st[b + 2], st[b + 3], st[b + 4]
  local newest, oldest = st[b + 6], st[b + 7]
  local key = KEYS[i + 1]
  -- bounded eviction of entries that matter neither to the window nor to today
  local cutoff = lo
  if last_mid < cutoff then cutoff = last_mid end
  local refresh = (newest == false) or newest > now or newest < last_mid or
    math.floor(now / TTL_REFRESH_US) ~= math.floor(newest / TTL_REFRESH_US)
  if oldest and oldest < cutoff then
    local k = redis.call('ZCOUNT', key, '-inf', '(' .. fmt(cutoff))
    if k > EVICT_BATCH then k = EVICT_BATCH end
    redis.call('ZREMRANGEBYRANK', key, 0, k - 1)
    refresh = true -- the key may have been emptied and deleted
  end
  local score = now
  if newest and newest > score then score = newest end
  redis.call('ZADD', key, score, string.format('%016d:%d', total + cost, cost))
  -- TTL: the key must outlive its newest entry's window and today (for
  -- UsedToday). The first write of each TTL_REFRESH_US period and of each
  -- Pacific day sets it (and any write after eviction or a clock step back),
  -- so the TTL was set at most TTL_REFRESH_US ago and still covers that with
  -- TTL_MARGIN_MS - TTL_REFRESH_US to spare; later writes skip PEXPIRE.
  if refresh then
    local keep = window
    if next_mid - now > keep then keep = next_mid - now end
    redis.call('PEXPIRE', key, math.floor(keep / 1000) + 1 + TTL_MARGIN_MS)
  end
  reply[5 + i] = st[b + 5]
end
return reply
`)

// redisStatusScript reads every bucket of a credential without writing anything
// (no admission, no eviction, no PEXPIRE).
//
//	KEYS[1]      exhaustion marker  trendfetch:{<credential>}:exhausted
//	KEYS[1+i]    bucket i's log, i = 1..n
//	ARGV[1]      m; ARGV[2..m+1] Pacific midnights, Unix µs, ascending
//	then per bucket i, 3 values: limit (units), window (µs; 0 = calendar), max cost (units; 0 = none)
//
// Reply (array of integers): [1] now (Unix µs), [2] exhausted until (Unix µs, 0 if
// not marked), then per bucket 6 values: used, entries in window, oldest entry in
// window (Unix µs, 0 if none), Retry-After µs for cost 1, Retry-After µs for the max
// cost (0 = fits now), units since the last Pacific midnight.
var redisStatusScript = redis.NewScript(redisLuaPrelude + `
local function clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- midnights(first, count, now): last Pacific midnight <= now, first one > now
-- (nil when the table does not cover now; the caller answers NO_MIDNIGHT)
local function midnights(first, count, now)
  local last, nxt = nil, nil
  for i = first, first + count - 1 do
    local m = tonumber(ARGV[i])
    if m <= now then last = m elseif nxt == nil then nxt = m end
  end
  return last, nxt
end

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

-- lower(now, window, last_mid): first µs inside the window
local function lower(now, window, last_mid)
  if window == 0 then return last_mid end
  return now - window + 1
end

local n = #KEYS - 1
local m = tonumber(ARGV[1])
local now = clock_us()
local last_mid, next_mid = midnights(2, m, now)
if last_mid == nil or next_mid == nil then return redis.error_reply(NO_MIDNIGHT) end
local p = m + 2

local ex_until = 0
local ex = redis.call('GET', KEYS[1])
if ex then
  ex_until = tonumber(ex)
  if ex_until <= now then ex_until = 0 end
end
local reply = {now, ex_until}
for i = 1, n do
  local limit, window, maxcost = tonumber(ARGV[p]), tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2])
  p = p + 3
  local key = KEYS[i + 1]
  local lo = lower(now, window, last_mid)
  local total, base = state(key, lo)
  local used = total - base
  local entries, oldest = 0, 0
  if used > 0 then
    entries = redis.call('ZCOUNT', key, fmt(lo), '+inf')
    local first = redis.call('ZRANGEBYSCORE', key, fmt(lo), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    oldest = tonumber(first[2])
  end
  local r1, rmax = 0, 0
  if used + 1 > limit then r1 = retry_us(key, lo, now, window, next_mid, total + 1 - limit) end
  if maxcost > 0 and used + maxcost > limit then
    rmax = retry_us(key, lo, now, window, next_mid, total + maxcost - limit)
  end
  local ttotal, tbase = state(key, last_mid)
  local k = #reply
  reply[k + 1], reply[k + 2], reply[k + 3] = used, entries, oldest
  reply[k + 4], reply[k + 5], reply[k + 6] = r1, rmax, ttotal - tbase
end
return reply
`)

// redisMarkScript sets the exhaustion marker, never shortening an existing one.
//
//	KEYS[1] trendfetch:{<credential>}:exhausted
//	ARGV[1] until, Unix µs; ARGV[2] until, Unix ms (PEXPIREAT)
//
// Reply: the marker's until after the call, Unix µs.
var redisMarkScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return tonumber(cur) end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return tonumber(ARGV[1])
`)
