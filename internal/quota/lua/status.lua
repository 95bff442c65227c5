-- status.lua (after lib.lua): read every bucket of a credential, writing
-- nothing.
--
-- KEYS[1]    trendfetch:{<credential>}:state (the marker and the
--            buckets' caches, reserve.lua)
-- KEYS[1+i]  bucket i's log, i = 1..n
-- ARGV[1]    the Pacific midnights (lib.lua)
-- ARGV[1+i]  bucket i's limit (units), window (µs; 0 = the Pacific day)
--            and largest cost (units), three packed doubles
--
-- Reply: {now (Unix µs), marker until (Unix µs; 0: none), then per bucket
-- used, entries in the window, oldest entry in it (Unix µs; 0: none),
-- Retry-After µs of a cost-1 call and of the largest cost (0: fits now),
-- units since the last Pacific midnight}.
local read, retry_us, pending, entry = logs()
local reply = {now, exhausted}
for i = 1, #KEYS - 1 do
  local key, c = KEYS[i + 1], got[i + 1]
  local limit, window, maxcost = struct.unpack('<ddd', ARGV[i + 1])
  local lo = window > 0 and now - window + 1 or last_mid -- 0: the Pacific day
  local total, base, _, oldest = read(key, lo, c)
  local used, entries, r1, rmax = total - base, 0, 0, 0
  if oldest > 0 then entries = redis.call('ZCOUNT', key, lo, '+inf') end
  for j = 1, pending(c) do
    if entry(c, j) >= lo then entries = entries + 1 end
  end
  if used + 1 > limit then r1 = retry_us(key, lo, window, base, used + 1 - limit, c) end
  if maxcost <= limit and used + maxcost > limit then rmax = retry_us(key, lo, window, base, used + maxcost - limit, c) end
  local _, today = read(key, last_mid, c)
  for _, v in ipairs({used, entries, oldest, r1, rmax, total - today}) do reply[#reply + 1] = v end
end
return reply
