-- lib.lua: what reserve.lua and status.lua share; Go prepends it to each
-- (redis_lua.go). A bucket's log is a sorted set, one entry per admitted
-- call: score = admission time (Redis TIME, Unix µs, unique in the log),
-- member = "<cum>:<cost>", cum = the log's running total of units after
-- this entry, 16 digits. Scores and cums rise together, so the units of
-- the entries with score >= lo are total - base: total = the newest
-- entry's cum, base = the cum before the first entry with score >= lo.
-- Numbers stay below 2^53 (exact doubles); strings use %d, never tostring.
if redis.replicate_commands then redis.replicate_commands() end

local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]

-- last_mid, next_mid: the Pacific midnights around now, from ARGV[1]
-- (packed doubles, Unix µs, ascending, computed by Go with tzdata)
local last_mid, next_mid
for j = 1, #ARGV[1] - 15, 8 do
  local a, b = struct.unpack('<dd', ARGV[1], j)
  if a <= now and now < b then last_mid, next_mid = a, b break end
end
if not last_mid then
  return redis.error_reply('ERR trendfetch: the Pacific midnight table does not cover Redis TIME (client clock off by a day or more?)')
end

-- got: the state hash's fields "exhausted" (the upstream marker, Unix µs)
-- and KEYS[2..], the buckets' caches (reserve.lua)
local got = redis.call('HMGET', KEYS[1], 'exhausted', unpack(KEYS, 2))
local exhausted = tonumber(got[1]) or 0
if exhausted <= now then exhausted = 0 end

-- A bucket's cache (reserve.lua: field KEYS[1+i] of the state hash)
-- starts with 5 packed doubles and may end with pending entries: the
-- newest entries, not yet in the log, 3 doubles each (score, cum, cost).
-- logs() -> read, retry_us, pending, entry, which read a bucket's log and
-- pending entries: built only when a cache cannot answer (status.lua, a
-- reserve.lua miss or denial), as a script builds its functions each run.
local function logs()
  -- cum_cost(member) -> cum, cost
  local function cum_cost(m)
    return tonumber(string.sub(m, 1, 16)), tonumber(string.sub(m, 18))
  end
  -- pending(c) -> how many; entry(c, j) -> score, cum, cost of the j-th
  local function pending(c) return c and (#c - 40) / 24 or 0 end
  local function entry(c, j) return struct.unpack('<ddd', c, 17 + 24 * j) end

  -- read(key, lo, c) -> total, base, newest score, score of the first entry
  -- with score >= lo (newest and first 0 when there is none), from the log
  -- and, given its cache c, the pending entries (c's newest: its last
  -- pending entry, else its first two doubles)
  local function read(key, lo, c)
    local total, newest = 0, 0
    if c then
      newest, total = struct.unpack('<dd', c, #c > 40 and #c - 23 or 1)
    else
      local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      if last[1] then total, newest = cum_cost(last[1]), tonumber(last[2]) end
    end
    if newest < lo then return total, total, newest, 0 end
    local first = redis.call('ZRANGEBYSCORE', key, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if first[1] then
      local cum, cost = cum_cost(first[1])
      return total, cum - cost, newest, tonumber(first[2])
    end
    for j = 1, pending(c) do
      local score, cum, cost = entry(c, j)
      if score >= lo then return total, cum - cost, newest, score end
    end
    return read(key, lo) -- a cache whose log lost entries: the log alone
  end

  -- retry_us(key, lo, window, base, need, c) -> µs until need more units
  -- have left the window: the entry whose cum first reaches base + need
  -- (binary search over the log's ranks, else the pending entries of c)
  -- leaves at its score + window; the Pacific day's all leave at the next
  -- midnight.
  local function retry_us(key, lo, window, base, need, c)
    if window == 0 then return next_mid - now end
    local a, b = redis.call('ZCOUNT', key, '-inf', '(' .. string.format('%d', lo)), redis.call('ZCARD', key) - 1
    if b < a or cum_cost(redis.call('ZRANGE', key, b, b)[1]) < base + need then
      for j = 1, pending(c) do
        local score, cum = entry(c, j)
        if cum >= base + need then return math.max(score + window - now, 1) end
      end
    end
    while a < b do
      local mid = math.floor((a + b) / 2)
      if cum_cost(redis.call('ZRANGE', key, mid, mid)[1]) >= base + need then b = mid else a = mid + 1 end
    end
    return math.max(tonumber(redis.call('ZRANGE', key, a, a, 'WITHSCORES')[2]) + window - now, 1)
  end
  return read, retry_us, pending, entry
end
