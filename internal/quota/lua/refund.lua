-- refund.lua (after lib.lua): remove the entries one reservation recorded,
-- all or none, only while each is the newest of its log; the pending
-- entries move to the logs first and the caches go.
--
-- KEYS[1]     state  trendfetch:{<credential>}:state (reserve.lua)
-- KEYS[1+i]   log    bucket i's log, i = 1..n
-- ARGV[2i-1]  at     the score of the entry in bucket i (reserve.lua's at)
-- ARGV[2i]    cost   its cost, units
--
-- Reply: 1 when the entries were removed, else 0.
local _, _, caches = read_state(KEYS, 0, 'exhausted')
for i = 1, #KEYS - 1 do
  if caches[3 + i] then log_add(KEYS[1 + i], string.sub(caches[3 + i], 41)) end
end
redis.call('HDEL', KEYS[1], unpack(KEYS, 2))
local members = {}
for i = 1, #KEYS - 1 do
  local at, cost = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local last = redis.call('ZRANGE', KEYS[1 + i], -1, -1, 'WITHSCORES')
  local member, score = last[1], tonumber(last[2])
  if not member or score ~= at or tonumber(string.sub(member, 18)) ~= cost then return 0 end
  members[i] = member
end
for i, member in ipairs(members) do redis.call('ZREM', KEYS[1 + i], member) end
return 1
