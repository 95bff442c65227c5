-- reserve.lua (after lib.lua): admit one call into every bucket it charges,
-- or into none; a denial writes nothing.
--
-- KEYS[1]    trendfetch:{<credential>}:state, field "exhausted": the
--            upstream marker, Unix µs
-- KEYS[1+i]  bucket i's log, i = 1..n
-- ARGV[1]    the Pacific midnights (lib.lua)
-- ARGV[1+i]  bucket i's cost, limit (units) and window (µs; 0 = the
--            Pacific day), three packed doubles
--
-- Reply: {allowed 1/0, now (Unix µs), denying bucket 1..n (0: none),
-- Retry-After µs, marker until (Unix µs; 0: none), then units left in each
-- bucket, then the score recorded in each bucket (0 on denial)}.
--
-- Housekeeping runs at a log's first admission of each PERIOD_US: it
-- evicts the entries that matter neither to the window nor to today, and
-- sets the TTL to outlive the window (or today) by TTL_MARGIN_MS, which
-- covers the later admissions of the period (margin > period).
local PERIOD_US = 120000000
local TTL_MARGIN_MS = 300000

local n = #KEYS - 1
local exhausted = tonumber(redis.call('HGET', KEYS[1], 'exhausted')) or 0
if exhausted <= now then exhausted = 0 end

local reply = {1, now, 0, 0, exhausted}
local retry = exhausted - now
local b = {} -- per bucket: cost, window, lo, total, newest
for i = 1, n do
  local key = KEYS[i + 1]
  local cost, limit, window = struct.unpack('<ddd', ARGV[i + 1])
  local lo = window_start(window)
  local total, base, newest = read(key, lo)
  b[i] = {cost, window, lo, total, newest}
  local need = total - base + cost - limit
  reply[5 + i] = math.max(limit - (total - base), 0)
  if need > 0 then
    local r = retry_us(key, lo, window, base, need)
    if reply[3] == 0 or r > reply[4] then reply[3], reply[4] = i, r end
  end
end
if exhausted > 0 or reply[3] > 0 then
  reply[1], reply[4] = 0, math.max(reply[4], retry)
  for i = 1, n do reply[5 + n + i] = 0 end
  return reply
end

for i = 1, n do
  local key = KEYS[i + 1]
  local cost, window, lo, total, newest = unpack(b[i])
  local score = math.max(now, newest + 1)
  redis.call('ZADD', key, score, string.format('%016d:%d', total + cost, cost))
  if newest == 0 or math.floor(newest / PERIOD_US) ~= math.floor(now / PERIOD_US) then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. string.format('%d', math.min(lo, last_mid)))
    redis.call('PEXPIRE', key, math.floor(math.max(window, next_mid - now) / 1000) + 1 + TTL_MARGIN_MS)
  end
  reply[5 + i] = reply[5 + i] - cost
  reply[5 + n + i] = score
end
return reply
