-- ratelimit.lua: the sliding-window counter of one serve client (docs/api.md;
-- the arithmetic of counterDecide in ratelimit.go), on the server's TIME.
-- KEYS[1]  the client's hash: w (index of the current window, now_ms // window),
--          p (requests admitted in window w-1), c (requests admitted in w)
-- ARGV[1]  limit: requests per window (integer >= 1)
-- ARGV[2]  window in milliseconds (integer >= 1)
-- Reply: {allowed (1 or 0), remaining (after this request), retry_after_ms (0 when allowed)}
-- An admission writes the hash with a TTL to the end of the next window (when
-- it stops counting); a denial writes nothing.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idx = math.floor(now / window)
local elapsed = now - idx * window

local st = redis.call('HMGET', key, 'w', 'p', 'c')
local w = tonumber(st[1])
local prev, cur = 0, 0
if w == idx then
  prev, cur = tonumber(st[2]), tonumber(st[3])
elseif w == idx - 1 then
  prev = tonumber(st[3])
end

-- Admitted when prev * (window - elapsed) / window + cur + 1 <= limit,
-- in integers (exact below 2^53).
local room = limit * window - prev * (window - elapsed) - cur * window
if room < window then
  local retry
  if cur + 1 <= limit then
    retry = math.ceil(((window - elapsed) * prev - (limit - cur - 1) * window) / prev)
  else
    retry = (window - elapsed) + math.ceil((cur - limit + 1) * window / cur)
  end
  return {0, 0, retry}
end

cur = cur + 1
redis.call('HSET', key, 'w', idx, 'p', prev, 'c', cur)
redis.call('PEXPIRE', key, 2 * window - elapsed)
return {1, math.floor((room - window) / window), 0}
