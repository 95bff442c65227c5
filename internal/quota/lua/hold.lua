-- hold.lua (after lib.lua): release and refill the outage reserve id of a
-- credential, atomically (docs/quota.md, "The outage reserve"): the units it
-- spent become one entry per bucket now, its previous hold goes, and up to
-- want units per bucket are held (what fits beside the window's units and
-- the other holds) until hold_for plus the window after now (calendar: the
-- Pacific midnight after now + hold_for). The pending entries move to the
-- logs first and the caches go, as in refund.lua.
--
-- KEYS[1]     state     trendfetch:{<credential>}:state (reserve.lua)
-- KEYS[1+i]   log       bucket i's log (lib.lua), i = 1..n
-- ARGV[1]     id        the reserve's id (no space)
-- ARGV[2]     hold_for  µs during which the host may spend the hold
-- ARGV[4i-1]  limit     bucket i's limit, units
-- ARGV[4i]    window    bucket i's window, µs (0: the Pacific day)
-- ARGV[4i+1]  spent     units the reserve spent in bucket i
-- ARGV[4i+2]  want      units to hold in bucket i
-- ARGV[4n+3]  midnights the Pacific midnights, as reserve.lua's
--
-- Reply: {now (Redis TIME, Unix µs), then per bucket i: the units held}.
local n = #KEYS - 1
local now = clock()
local id, hold_for = ARGV[1], tonumber(ARGV[2])
local _, _, caches = read_state(KEYS, now, 'exhausted')
for i = 1, n do
  if caches[3 + i] then log_add(KEYS[1 + i], string.sub(caches[3 + i], 41)) end
end
if n > 0 then redis.call('HDEL', KEYS[1], unpack(KEYS, 2)) end
local log_read = log_readers()

local kept = {} -- the other reserves' holds in force
for line in string.gmatch(caches[3] or '', '[^\n]+') do
  local who, till = string.match(line, '^[^ ]+ ([^ ]+) %d+ (%d+)$')
  if who ~= id and tonumber(till) > now then kept[#kept + 1] = line end
end
local reply, ttl = {now}, 0
for i = 1, n do
  local log, bucket = KEYS[1 + i], string.sub(KEYS[1 + i], #KEYS[1] - 4)
  local limit, window, spent, want = tonumber(ARGV[4 * i - 1]), tonumber(ARGV[4 * i]), tonumber(ARGV[4 * i + 1]), tonumber(ARGV[4 * i + 2])
  local total, _, newest = log_read(log, now + 1)
  if spent > 0 then
    redis.call('ZADD', log, string.format('%d', math.max(now, newest + 1)), string.format('%016d:%d', total + spent, spent))
  end
  local _, day_end = pacific_day(now + hold_for, 4 * n + 3)
  local day_start = pacific_day(now, 4 * n + 3)
  local top, base = log_read(log, window > 0 and now - window + 1 or day_start)
  local held = math.max(math.min(want, limit - (top - base) - held_in(table.concat(kept, '\n'), bucket, now)), 0)
  if held > 0 then
    local till = window > 0 and now + hold_for + window or day_end
    kept[#kept + 1] = string.format('%s %s %d %d', bucket, id, held, till)
    ttl = math.max(ttl, till - now)
  end
  reply[1 + i] = held
end
if #kept > 0 then redis.call('HSET', KEYS[1], 'holds', table.concat(kept, '\n')) else redis.call('HDEL', KEYS[1], 'holds') end
local ttl_ms = math.floor(ttl / 1000) + 300000
if ttl > 0 and redis.call('PTTL', KEYS[1]) < ttl_ms then redis.call('PEXPIRE', KEYS[1], ttl_ms) end
return reply
