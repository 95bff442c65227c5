-- lease.lua: take, renew, free or break a run lease (redis_lua.go). A
-- lease is a string key trendfetch:{<credential>}:lease:<region> holding
-- the token "<random id> <holder>" with a PX expiry.
--
-- KEYS[1]  the lease key
-- ARGV[1]  op: lock | renew | unlock | break
-- ARGV[2]  the token (break: the holder, the text after the token's id)
-- ARGV[3]  ttl, ms (lock and renew)
--
-- Reply: lock: {1} when taken or extended, else {0, current token, PTTL
-- ms}; renew, unlock, break: 1 when done, 0 when the key is gone or holds
-- another token (holder).
local op, token, ttl = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call('GET', KEYS[1])
if op == 'lock' then
  if not cur then
    redis.call('SET', KEYS[1], token, 'PX', ttl)
    return {1}
  end
  if cur ~= token then return {0, cur, redis.call('PTTL', KEYS[1])} end
end
if op == 'break' and cur then cur = string.match(cur, '^%S+ (.*)$') or cur end
if cur ~= token then return 0 end
if op == 'lock' then
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1}
end
if op == 'renew' then return redis.call('PEXPIRE', KEYS[1], ttl) end
return redis.call('DEL', KEYS[1])
