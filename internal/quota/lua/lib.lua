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
-- (packed doubles, Unix µs, ascending, computed by Go with tzdata; its
-- second and third bracket the client's day, tried first).
local last_mid, next_mid = 0, 0
if #ARGV[1] >= 24 then last_mid, next_mid = struct.unpack('<dd', ARGV[1], 9) end
if not (last_mid <= now and now < next_mid) then
  last_mid = nil
  for j = 1, #ARGV[1] - 15, 8 do
    local a, b = struct.unpack('<dd', ARGV[1], j)
    if a <= now and now < b then last_mid, next_mid = a, b end
  end
end
if not last_mid then
  return redis.error_reply('ERR trendfetch: the Pacific midnight table does not cover Redis TIME (client clock off by a day or more?)')
end

-- cum_cost(member) -> cum, cost
local function cum_cost(m)
  return tonumber(string.sub(m, 1, 16)), tonumber(string.sub(m, 18))
end

-- read(key, lo) -> total, base, newest score, score of the first entry
-- with score >= lo (newest and first 0 when there is none)
local function read(key, lo)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if not last[1] then return 0, 0, 0, 0 end
  local total, newest = cum_cost(last[1]), tonumber(last[2])
  if newest < lo then return total, total, newest, 0 end
  local first = redis.call('ZRANGEBYSCORE', key, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local cum, cost = cum_cost(first[1])
  return total, cum - cost, newest, tonumber(first[2])
end

-- retry_us(key, lo, window, base, need) -> µs until need more units have
-- left the window: the entry whose cum first reaches base + need leaves at
-- its score + window (binary search over ranks); the Pacific day's all
-- leave at the next midnight.
local function retry_us(key, lo, window, base, need)
  if window == 0 then return next_mid - now end
  local a, b = redis.call('ZCOUNT', key, '-inf', '(' .. string.format('%d', lo)), redis.call('ZCARD', key) - 1
  while a < b do
    local mid = math.floor((a + b) / 2)
    if cum_cost(redis.call('ZRANGE', key, mid, mid)[1]) >= base + need then b = mid else a = mid + 1 end
  end
  return math.max(tonumber(redis.call('ZRANGE', key, a, a, 'WITHSCORES')[2]) + window - now, 1)
end
