-- reserve.lua (after lib.lua): admit one call into every bucket it charges,
-- or into none; a denial writes nothing.
--
-- KEYS[1]    trendfetch:{<credential>}:state, a hash (lib.lua got)
-- KEYS[1+i]  bucket i's log, i = 1..n
-- ARGV[1]    the Pacific midnights (lib.lua)
-- ARGV[2]    per bucket i its cost, limit (units) and window (µs; 0 =
--            the Pacific day), three packed doubles (bytes 24i-23 to 24i)
--
-- Reply: packed doubles (as ARGV): allowed 1/0, now (Unix µs), denying
-- bucket 1..n (0: none), Retry-After µs, marker until (Unix µs; 0: none),
-- then per bucket the units left before this call, then per bucket the
-- score recorded (0 on denial).
--
-- A bucket's cache packs five doubles: the newest score and total of its
-- entries (unless its newest pending entry's supersede them), head =
-- the score of the first entry with score >= since and base = the cum
-- before it, then its pending entries (lib.lua). An admission appends its
-- entry there instead of to the log (the five rewritten only when they
-- change), and moves them all to the log (one ZADD) once MAX_PENDING
-- are waiting or at housekeeping. Log plus pending entries are the truth:
-- head and base answer for every lo in [since, head] (later entries come
-- after the newest), an empty window needs only newest < lo, and anything
-- else (no cache, a window start before since: a longer window or a clock
-- step back, head out of the window) reads them (lib.lua read), as does a
-- bucket the cache would deny.
--
-- Housekeeping runs at a log's first admission of each PERIOD_US (and
-- when its cache is missing): it moves the pending entries to the log,
-- evicts the entries that matter neither to the window nor to today, and
-- sets the TTL of the log, and of the state hash if longer, to outlive the
-- window (or today) by TTL_MARGIN_MS, which covers the later admissions of
-- the period (margin > period).
local PERIOD_US = 120000000
local TTL_MARGIN_MS = 300000
local MAX_PENDING = 16

local n = #KEYS - 1
local deny, retry = 0, 0
local tail, cache, flush = {}, {}, {} -- tail: left, then scores
local chores, read, retry_us -- only when needed
for i = 1, n do
  local key, c = KEYS[i + 1], got[i + 1]
  local cost, limit, window = struct.unpack('<ddd', ARGV[2], 24 * i - 23)
  local lo = window > 0 and now - window + 1 or last_mid -- 0: the Pacific day
  local newest, total, head, base, since, waiting = 0, 0, 0, 0, 0, c and (#c - 40) / 24 or 0
  if c then newest, total, head, base, since = struct.unpack('<ddddd', c) end
  if waiting > 0 then newest, total = struct.unpack('<dd', c, #c - 23) end
  local keep = c and newest >= lo and since <= lo and lo <= head and total - base + cost <= limit
  if c and newest < lo then
    base, head, since = total, 0, lo
  elseif not keep then
    if not read then read, retry_us = logs() end
    total, base, newest, head = read(key, lo, c)
    since = lo
  end
  local used, score = total - base, math.max(now, newest + 1)
  tail[i], tail[n + i] = math.max(limit - used, 0), score
  if used + cost > limit then -- not keep: read above built retry_us
    local r = retry_us(key, lo, window, base, used + cost - limit, c)
    if deny == 0 or r > retry then deny, retry = i, r end
  end
  local mine = struct.pack('<ddd', score, total + cost, cost)
  if not c or math.floor(newest / PERIOD_US) ~= math.floor(now / PERIOD_US) then
    chores = chores or {}
    chores[i] = {math.min(lo, last_mid), math.floor(math.max(window, next_mid - now) / 1000) + 1 + TTL_MARGIN_MS}
  end
  local flushing = chores and chores[i] or waiting + 1 >= MAX_PENDING
  if flushing or not keep then
    local rest = c and string.sub(c, 41) or ''
    if flushing then flush[i], rest, mine = rest .. mine, '', '' end
    c = struct.pack('<ddddd', score, total + cost, head > 0 and head or score, base, since) .. rest
  end
  cache[2 * i - 1], cache[2 * i] = key, c .. mine
end

local allowed = (exhausted > 0 or deny > 0) and 0 or 1
if allowed == 0 then for i = 1, n do tail[n + i] = 0 end end
local reply = struct.pack('<ddddd' .. string.rep('d', 2 * n), allowed, now, deny, math.max(retry, exhausted - now, 0), exhausted, unpack(tail))
if allowed == 0 then return reply end

local state_ttl = 0
for i = 1, n do
  local key, chore = KEYS[i + 1], chores and chores[i]
  if flush[i] then
    local moved = {}
    for j = 1, #flush[i] / 24 do
      local score, cum, cost = struct.unpack('<ddd', flush[i], 24 * j - 23)
      moved[2 * j - 1], moved[2 * j] = string.format('%d', score), string.format('%016d:%d', cum, cost)
    end
    redis.call('ZADD', key, unpack(moved))
  end
  if chore then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. string.format('%d', chore[1]))
    redis.call('PEXPIRE', key, chore[2])
    state_ttl = math.max(state_ttl, chore[2])
  end
end
redis.call('HSET', KEYS[1], unpack(cache))
if state_ttl > 0 and state_ttl > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], state_ttl) end
return reply
