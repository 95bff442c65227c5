-- refund.lua: remove the entries one reservation recorded, only while each
-- is still the newest entry of its log, all or none (a later entry's
-- running total counts it: it then stays, the safe side). The pending
-- entries of the buckets' caches (reserve.lua) move to the logs first, and
-- the caches go, so the next admission reads the logs.
--
-- KEYS[1]    trendfetch:{<credential>}:state
-- KEYS[1+i]  bucket i's log, i = 1..n
-- ARGV[i]    the entry's score (Unix µs) and cost (units), two packed
--            doubles
--
-- Reply: 1 when the entries were removed, else 0.
local caches, members = redis.call('HMGET', KEYS[1], unpack(KEYS, 2)), {}
for i = 1, #KEYS - 1 do
  for j = 1, caches[i] and (#caches[i] - 40) / 24 or 0 do
    local score, cum, cost = struct.unpack('<ddd', caches[i], 17 + 24 * j)
    redis.call('ZADD', KEYS[i + 1], string.format('%d', score), string.format('%016d:%d', cum, cost))
  end
end
redis.call('HDEL', KEYS[1], unpack(KEYS, 2))
for i = 1, #KEYS - 1 do
  local score, cost = struct.unpack('<dd', ARGV[i])
  local last = redis.call('ZRANGE', KEYS[i + 1], -1, -1, 'WITHSCORES')
  if not (last[1] and tonumber(last[2]) == score and tonumber(string.sub(last[1], 18)) == cost) then return 0 end
  members[i] = last[1]
end
for i = 1, #members do redis.call('ZREM', KEYS[i + 1], members[i]) end
return 1
