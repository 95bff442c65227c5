-- refund.lua (after lib.lua): remove the entries one reservation recorded,
-- only while each is still the newest entry of its log, all or none (a
-- later entry's running total counts it: it then stays, the safe side).
--
-- KEYS[i]  bucket i's log, i = 1..n
-- ARGV[1]  the Pacific midnights (lib.lua; unused)
-- ARGV[1+i] the entry's score (Unix µs) and cost (units), two packed doubles
--
-- Reply: 1 when the entries were removed, else 0.
local members = {}
for i = 1, #KEYS do
  local score, cost = struct.unpack('<dd', ARGV[i + 1])
  local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  if not (last[1] and tonumber(last[2]) == score and select(2, cum_cost(last[1])) == cost) then return 0 end
  members[i] = last[1]
end
for i = 1, #KEYS do redis.call('ZREM', KEYS[i], members[i]) end
return 1
