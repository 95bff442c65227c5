-- lib.lua: the functions reserve.lua, status.lua and refund.lua share (put
-- before each); the data layout is docs/quota.md's "Data layout":
-- a bucket's log: a sorted set, score = Redis TIME (Unix µs, unique),
-- member = "<cum>:<cost>" (cum: the running total after it, 16 digits);
-- a bucket's cache: the state hash field <log key>, five packed doubles
-- (newest, total, head, base, since), then pending entries (score, cum, cost).
-- Numbers stay below 2^53 (exact doubles); strings use %d, never tostring.

-- clock() -> now: Redis TIME, Unix µs (effects replication, for Redis < 5;
-- REDIS_VERSION_NUM exists from Redis 7, where the call is a deprecated no-op).
local function clock()
  if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end
  local t = redis.call('TIME')
  return t[1] * 1000000 + t[2]
end

-- pacific_day(now, first) -> day_start, day_end: the Pacific midnights around
-- now among those packed in ARGV[first] (Unix µs, ascending, little-endian
-- doubles: no decimal parsing), or an error.
local function pacific_day(now, first)
  local midnights = ARGV[first]
  for at = 1, #midnights - 15, 8 do
    local a, b = struct.unpack('<dd', midnights, at)
    if a <= now and now < b then return a, b end
  end
  error(redis.error_reply('ERR trendfetch: the Pacific midnight table does not cover Redis TIME (client clock off by a day or more?)'))
end

-- mark_until(value, now) -> the until of a mark (state hash field exhausted
-- or exhausted:<call site> = "<until, Unix µs> <why>"), 0 when none or over.
local function mark_until(v, now)
  local till = tonumber(v and string.match(v, '^%d+')) or 0
  return till > now and till or 0
end

-- read_state(keys, now, site) -> exhausted (the later end of the
-- credential's mark and of the mark field site; 0: none), by_site (1 when
-- site's ends later), caches (caches[3]: the field holds, the outage
-- reserves' "<bucket> <id> <units> <until µs>" lines; caches[3 + i]: the log
-- keys[1 + i]'s cache).
local function read_state(keys, now, site)
  local caches = redis.call('HMGET', keys[1], 'exhausted', site, 'holds', unpack(keys, 2))
  if not (caches[1] or caches[2]) then return 0, 0, caches end
  local cred, own = mark_until(caches[1], now), mark_until(caches[2], now)
  return math.max(cred, own), own > cred and 1 or 0, caches
end

-- held_in(holds, bucket, now) -> the units the holds (read_state's caches[3])
-- of bucket hold at now.
local function held_in(holds, bucket, now)
  local units = 0
  for b, u, till in string.gmatch(holds, '([^ \n]+) [^ \n]+ (%d+) (%d+)') do
    if b == bucket and tonumber(till) > now then units = units + tonumber(u) end
  end
  return units
end

-- pending(cache) -> how many pending entries cache holds.
local function pending(cache) return cache and (#cache - 40) / 24 or 0 end

-- read_cache(cache) -> newest, total, head, base, since (0 without cache);
-- the newest pending entry's score and cum supersede newest and total.
local function read_cache(cache)
  if not cache then return 0, 0, 0, 0, 0 end
  local newest, total, head, base, since = struct.unpack('<ddddd', cache)
  if #cache > 40 then newest, total = struct.unpack('<dd', cache, #cache - 23) end
  return newest, total, head, base, since
end

-- log_add(log, packed): ZADD the entries packed as the pending ones.
local function log_add(log, packed)
  local args = {}
  for j = 1, #packed / 24 do
    local score, cum, cost = struct.unpack('<ddd', packed, 24 * j - 23)
    args[2 * j - 1], args[2 * j] = string.format('%d', score), string.format('%016d:%d', cum, cost)
  end
  if #args > 0 then redis.call('ZADD', log, unpack(args)) end
end

-- log_readers() -> log_read, retry_after, pending_entry (built only when a
-- cache cannot answer: Lua creates a script's functions at every run)
local function log_readers()
  -- pending_entry(cache, j) -> score, cum, cost of the jth pending entry
  local function pending_entry(cache, j) return struct.unpack('<ddd', cache, 17 + 24 * j) end
  -- cum_cost(member) -> cum, cost
  local function cum_cost(m) return tonumber(string.sub(m, 1, 16)), tonumber(string.sub(m, 18)) end
  -- log_read(log, lo, cache) -> total (the newest cum), base (the cum before
  -- the first entry with score >= lo), the newest score and that first
  -- score (0: none), from the log and the cache's pending entries.
  local function log_read(log, lo, cache)
    local total, newest = 0, 0
    if cache then
      newest, total = read_cache(cache)
    else
      local last = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
      if last[1] then total, newest = cum_cost(last[1]), tonumber(last[2]) end
    end
    if newest < lo then return total, total, newest, 0 end
    local first = redis.call('ZRANGEBYSCORE', log, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if first[1] then
      local cum, cost = cum_cost(first[1])
      return total, cum - cost, newest, tonumber(first[2])
    end
    for j = 1, pending(cache) do
      local score, cum, cost = pending_entry(cache, j)
      if score >= lo then return total, cum - cost, newest, score end
    end
    return log_read(log, lo) -- the cache counts entries the log lost: the log alone
  end
  -- retry_after(log, lo, window, base, need, cache, now, day_end) -> µs
  -- until need more units have left the window (window 0: day_end): the
  -- entry whose cum first reaches base + need (binary search over ranks,
  -- else the pending entries) leaves at its score + window.
  local function retry_after(log, lo, window, base, need, cache, now, day_end)
    if window == 0 then return day_end - now end
    local a, b = redis.call('ZCOUNT', log, '-inf', '(' .. string.format('%d', lo)), redis.call('ZCARD', log) - 1
    if b < a or cum_cost(redis.call('ZRANGE', log, b, b)[1]) < base + need then
      for j = 1, pending(cache) do
        local score, cum = pending_entry(cache, j)
        if cum >= base + need then return math.max(score + window - now, 1) end
      end
    end
    while a < b do
      local mid = math.floor((a + b) / 2)
      if cum_cost(redis.call('ZRANGE', log, mid, mid)[1]) >= base + need then b = mid else a = mid + 1 end
    end
    return math.max(tonumber(redis.call('ZRANGE', log, a, a, 'WITHSCORES')[2]) + window - now, 1)
  end
  return log_read, retry_after, pending_entry
end
