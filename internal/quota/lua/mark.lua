-- mark.lua: set an upstream mark (lib.lua), never shortening one, and keep
-- the state hash at least that long.
--
-- KEYS[1]  trendfetch:{<credential>}:state
-- ARGV[1]  until, Unix µs
-- ARGV[2]  field: exhausted (the credential) or exhausted:<call site>
-- ARGV[3]  why, one line
--
-- Reply: the mark's until after the call, Unix µs.
local till = tonumber(ARGV[1])
local now = clock()
local cur = mark_until(redis.call('HGET', KEYS[1], ARGV[2]), now)
if cur >= till then return cur end
local ttl = math.floor((till - now) / 1000) + 1
if ttl <= 1 then return till end -- already over: nothing to mark
redis.call('HSET', KEYS[1], ARGV[2], ARGV[1] .. ' ' .. ARGV[3])
if ttl > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], ttl) end
return till
