-- refund.lua (after lib.lua): remove the entries one reservation recorded,
-- each only while it is still the newest entry of its log (a later entry's
-- running total counts it: it then stays, counted, the safe side).
--
-- KEYS[i]  bucket i's log, i = 1..n
-- ARGV[1]  the Pacific midnights (lib.lua; unused)
-- ARGV[1+i] the entry's score (Unix µs) and cost (units), two packed doubles
--
-- Reply: {1 when bucket i's entry was removed, else 0, for each bucket}.
local reply = {}
for i = 1, #KEYS do
  local score, cost = struct.unpack('<dd', ARGV[i + 1])
  local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  reply[i] = 0
  if last[1] and tonumber(last[2]) == score and select(2, cum_cost(last[1])) == cost then
    reply[i] = redis.call('ZREM', KEYS[i], last[1])
  end
end
return reply
