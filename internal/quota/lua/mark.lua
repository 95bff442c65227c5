-- mark.lua: set the upstream exhaustion marker, never shortening one, and
-- keep the state hash at least that long.
--
-- KEYS[1]  trendfetch:{<credential>}:state
-- ARGV[1]  until, Unix µs
--
-- Reply: the marker's until after the call, Unix µs.
if redis.replicate_commands then redis.replicate_commands() end
local till = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'exhausted'))
if cur and cur >= till then return cur end
local t = redis.call('TIME')
local ttl = math.floor((till - (t[1] * 1000000 + t[2])) / 1000) + 1
if ttl <= 1 then return till end -- already over: nothing to mark
redis.call('HSET', KEYS[1], 'exhausted', ARGV[1])
if ttl > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], ttl) end
return till
