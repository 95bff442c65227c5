-- reserve.lua (after lib.lua): admit one call into every bucket it
-- charges, or into none; a denial writes nothing.
--
-- KEYS[1]     state      trendfetch:{<credential>}:state, a hash: the
--                        upstream marks (lib.lua) and the buckets' caches
-- KEYS[1+i]   log        bucket i's log (lib.lua), i = 1..n
-- ARGV[1]     charges    per bucket i, three little-endian doubles at byte
--                        24i-23 (numbers parsed from decimal cost more):
--               cost     bucket i's charge, units
--               limit    bucket i's limit, units (negative: -limit of a
--                        shadow bucket, which never denies; docs/quota.md)
--               window   bucket i's window, µs (0: the Pacific day)
-- ARGV[2]     site       the call site's mark field (exhausted:<site>)
-- ARGV[3]     midnights  the Pacific midnights around the client's date
--                        (Unix µs, ascending, packed; lib.lua pacific_day)
--
-- Reply: the values below packed as little-endian doubles (a string: cheaper
-- to send and decode than a table of integers). Admitted: {1, now (Redis TIME, Unix µs), then per bucket i: left
-- (units left before this call), late (the entry's score is now + late µs;
-- > 0 only when the log's newest entry is at or after now)}.
-- Denied: {0, now, denied (the bucket i with the longest wait; 0: a mark),
-- retry_us (µs until the call may fit), exhausted (the later mark's end,
-- Unix µs; 0: none), by_site (1: the call site's mark is later), then per
-- bucket i: left}.
--
-- The outage reserves' holds (state hash field holds, lib.lua read_state)
-- count in every bucket they hold, as entries would (docs/quota.md).
--
-- A shadow bucket's would-be denial of an admitted call adds 1 to the state
-- hash field shadow:<bucket>:<site> = "<Pacific day start, Unix µs> <count>".
--
-- The cache (fresh: it answers for lo in [since, head] without denying; else
-- the log is read), pending entries and housekeeping: docs/quota.md, "Data layout".
local PERIOD_US = 120000000
local TTL_MARGIN_MS = 300000
local MAX_PENDING = 16

local n = #KEYS - 1
local now = clock()
local period = now - now % PERIOD_US -- the housekeeping period's start
local day_start, day_end -- the Pacific day, read when a calendar bucket or housekeeping needs it
local exhausted, by_site, caches = read_state(KEYS, now, ARGV[2])

local reply = {1, now} -- admitted (above)
local denied, retry_us = 0, 0
local fields, flushes, chores, would = {}, nil, nil, nil -- flushes, housekeeping, shadow denials: made when needed
local log_read, retry_after -- built when a cache is not fresh (lib.lua)
for i = 1, n do
  local log, cache = KEYS[1 + i], caches[3 + i]
  local cost, limit, window = struct.unpack('<ddd', ARGV[1], 24 * i - 23)
  local shadow = limit < 0
  if shadow then limit = -limit end
  if caches[3] then limit = limit - held_in(caches[3], string.sub(log, #KEYS[1] - 4), now) end -- outage reserves
  local newest, total, head, base, since = read_cache(cache)
  local due = not cache or newest < period or newest >= period + PERIOD_US -- housekeeping
  if (due or window == 0) and not day_start then day_start, day_end = pacific_day(now, 3) end
  local lo = window > 0 and now - window + 1 or day_start
  local fresh = cache and newest >= lo and since <= lo and lo <= head and total - base + cost <= limit
  if not (fresh or log_read) then log_read, retry_after = log_readers() end
  if cache and newest < lo then
    base, head, since = total, 0, lo
  elseif not fresh then
    total, base, newest, head = log_read(log, lo, cache)
    since = lo
  end
  local used, at = total - base, newest < now and now or newest + 1
  reply[1 + 2 * i], reply[2 + 2 * i] = used < limit and limit - used or 0, at - now
  if used + cost > limit and shadow then -- not fresh
    would = would or {}
    would[#would + 1] = i
  elseif used + cost > limit then
    local need, wait = used + cost - limit, window > 0 and window or day_end - now -- more than the window frees: holds stay
    if need <= used then wait = retry_after(log, lo, window, base, need, cache, now, day_end) end
    if denied == 0 or wait > retry_us then denied, retry_us = i, wait end
  end

  local entry = struct.pack('<ddd', at, total + cost, cost)
  if due then
    chores = chores or {}
    chores[i] = {evict_below = math.min(lo, day_start), ttl_ms = math.floor(math.max(window, day_end - now) / 1000) + 1 + TTL_MARGIN_MS}
  end
  local flush = due or pending(cache) + 1 >= MAX_PENDING
  if flush or not fresh then
    local rest = cache and string.sub(cache, 41) or ''
    if flush then
      flushes = flushes or {}
      flushes[i], rest, entry = rest .. entry, '', ''
    end
    cache = struct.pack('<ddddd', at, total + cost, head > 0 and head or at, base, since) .. rest
  end
  fields[2 * i - 1], fields[2 * i] = log, cache .. entry
end

if exhausted > 0 or denied > 0 then
  local no = {0, now, denied, math.max(retry_us, exhausted - now, 0), exhausted, by_site}
  for i = 1, n do no[6 + i] = reply[1 + 2 * i] end
  return struct.pack('<' .. string.rep('d', #no), unpack(no))
end

local state_ttl = 0
for i = 1, flushes and n or 0 do
  local log, chore = KEYS[1 + i], chores and chores[i]
  if flushes[i] then log_add(log, flushes[i]) end
  if chore then
    redis.call('ZREMRANGEBYSCORE', log, '-inf', '(' .. string.format('%d', chore.evict_below))
    redis.call('PEXPIRE', log, chore.ttl_ms)
    state_ttl = math.max(state_ttl, chore.ttl_ms)
  end
end
redis.call('HSET', KEYS[1], unpack(fields))
if would then
  if not day_start then day_start, day_end = pacific_day(now, 3) end
  local site = string.sub(ARGV[2], 11) -- after exhausted:
  for _, i in ipairs(would) do
    local field = 'shadow:' .. string.sub(KEYS[1 + i], #KEYS[1] - 4) .. ':' .. site -- the bucket: the log key after the state key's prefix
    local day, count = string.match(redis.call('HGET', KEYS[1], field) or '', '^(%d+) (%d+)$')
    count = tonumber(day) == day_start and tonumber(count) + 1 or 1
    redis.call('HSET', KEYS[1], field, string.format('%d %d', day_start, count))
  end
end
if state_ttl > 0 and state_ttl > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], state_ttl) end
return struct.pack('<' .. string.rep('d', #reply), unpack(reply))
