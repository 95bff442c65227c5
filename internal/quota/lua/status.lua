-- status.lua (after lib.lua): read every bucket of a credential, writing
-- nothing.
--
-- KEYS[1]     state      trendfetch:{<credential>}:state (reserve.lua)
-- KEYS[1+i]   log        bucket i's log (lib.lua), i = 1..n
-- ARGV[3i-2]  limit      bucket i's limit, units
-- ARGV[3i-1]  window     bucket i's window, µs (0: the Pacific day)
-- ARGV[3i]    max_cost   the largest cost of a call charging bucket i
-- ARGV[3n+1]  midnights  the Pacific midnights, as reserve.lua's
--
-- Reply: {now (Redis TIME, Unix µs), then per bucket i: used (units in the
-- window), entries (in the window), oldest (its first entry's score, Unix
-- µs; 0: none), retry_1 and retry_max (µs until a call of cost 1, of
-- max_cost, fits; 0: now), today (units since the last Pacific midnight),
-- then per mark in force (lib.lua) and per shadow count of today
-- (reserve.lua): its field, its value}.
local n = #KEYS - 1
local now = clock()
local day_start, day_end = pacific_day(now, 3 * n + 1)
local _, _, caches = read_state(KEYS, now, 'exhausted')
local log_read, retry_after, pending_entry = log_readers()

local reply = {now}
for i = 1, n do
  local log, cache = KEYS[1 + i], caches[3 + i]
  local limit, window, max_cost = tonumber(ARGV[3 * i - 2]), tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i])
  local lo = window > 0 and now - window + 1 or day_start
  local total, base, _, oldest = log_read(log, lo, cache)
  local used, entries, retry_1, retry_max = total - base, 0, 0, 0
  if oldest > 0 then entries = redis.call('ZCOUNT', log, lo, '+inf') end
  for j = 1, pending(cache) do
    if pending_entry(cache, j) >= lo then entries = entries + 1 end
  end
  if used + 1 > limit then retry_1 = retry_after(log, lo, window, base, used + 1 - limit, cache, now, day_end) end
  if max_cost <= limit and used + max_cost > limit then retry_max = retry_after(log, lo, window, base, used + max_cost - limit, cache, now, day_end) end
  local _, day_base = log_read(log, day_start, cache)
  for _, v in ipairs({used, entries, oldest, retry_1, retry_max, total - day_base}) do reply[#reply + 1] = v end
end
local state = redis.call('HGETALL', KEYS[1])
for j = 1, #state, 2 do
  local f, v = state[j], state[j + 1] -- a mark's field and value, a shadow count's, or a cache's
  if string.find(f, '^exhausted') and mark_until(v, now) > 0 then reply[#reply + 1], reply[#reply + 2] = f, v end
  if string.find(f, '^shadow:') and tonumber(string.match(v, '^%d+')) == day_start then reply[#reply + 1], reply[#reply + 2] = f, v end
  if f == 'holds' then reply[#reply + 1], reply[#reply + 2] = f, v end
end
return reply
