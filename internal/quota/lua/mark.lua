-- mark.lua (after lib.lua): set an upstream mark (lib.lua), never shortening
-- one nor ending it after the next Pacific midnight by Redis TIME (a client
-- clock days ahead must not lock every host out), and keep the state hash at
-- least that long.
--
-- KEYS[1]  trendfetch:{<credential>}:state
-- ARGV[1]  until, Unix µs
-- ARGV[2]  field: exhausted (the credential) or exhausted:<call site>
-- ARGV[3]  why, one line
-- ARGV[4]  the Pacific midnights around Redis TIME (packed as reserve.lua's)
--
-- Reply: the mark's until after the call, Unix µs.
local now = clock()
local _, day_end = pacific_day(now, 4)
local till = math.min(tonumber(ARGV[1]), day_end)
local cur = mark_until(redis.call('HGET', KEYS[1], ARGV[2]), now)
if cur >= till then return cur end
local ttl = math.floor((till - now) / 1000) + 1
if ttl <= 1 then return till end -- already over: nothing to mark
redis.call('HSET', KEYS[1], ARGV[2], string.format('%d', till) .. ' ' .. ARGV[3])
if ttl > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], ttl) end
return till
