package quota

// The Redis backend's counter buckets (AlgorithmCounter; the estimate and
// its bounds are in counter.go and doc.go).
//
// # Data layout
//
// Key trendfetch:{<credential>}:<bucket>:counter (counterKey) is a hash
// of n = Slots fields, a ring: field "<p>" (p = 0..n-1) holds counter j
// with j mod n = p, packed as two little-endian doubles (struct.pack '<dd',
// 16 bytes):
//
//	j      the counter's index: it covers [j*span, (j+1)*span) µs of Redis
//	       TIME, span = window/(n-1) µs
//	units  the units admitted into it
//
// Field "g" records the geometry the ring was written for: span and n,
// packed '<dd'. A field whose j is not the one a decision looks for holds
// an older counter and counts as 0; it is overwritten when its position
// comes round again. The hash therefore never holds more than n + 1 fields
// of constant size, whatever the limit and the call rate
// (TestRedisCounterMemoryUsage), and expires window + span + TTL_MARGIN_MS
// after the last admission.
//
// # Switching form (switch.go)
//
// A decision about a counter bucket whose g differs from its
// configuration folds the old ring into the new geometry; one whose field
// in the state hash is set (only a log writes it: its cache) folds the
// log's entries in. The reserve script then writes the converted ring and
// deletes the old form (and the cache field); the status script only
// reads. A decision about a log bucket without its cache (the rare path
// that rebuilds it) appends the bucket's counters, if any, to the log and
// deletes them; the status script always looks for them.
//
// # Scripts
//
// The counter shares redisReserveScript, redisStatusScript and
// redisRefundScript with the log (one script decides a call charging both
// kinds of bucket, atomically); a bucket's ARGV carries slots, 0 for a log.
// A decision reads the n fields and g (HMGET, O(n)), and an admission
// writes one and g (HSET) and PEXPIREs the key. The helpers below are appended to
// redisLuaPrelude; they compute exactly what counterWindow does in Go, in
// the same doubles, so the Redis backend decides as the embedded ones
// (TestRedisCounterAgreesWithMemory).

// redisLuaCounter holds the counter helpers of the scripts (see above).
// They are built by counter_lib() only when a script meets a counter
// bucket: every "local function" statement creates a closure each time a
// script runs (~0.05 µs plus Lua GC), and a decision about log buckets
// alone should not pay for six.
const redisLuaCounter = `
-- counter_lib() -> C with the counter helpers C.read, C.estimate, C.retry
-- and C.add (below)
local function counter_lib()
  local C = {}
  local fold, from_log -- defined below

  -- C.read(key, now, window, n, log_key): the counters of a counter
  -- bucket at now. Returns u (u[1] the oldest, counter c-n+1, .. u[n] the
  -- current one, counter c), span (µs), c, r (now's offset into counter
  -- c), own, the units C.add must keep in counter c's field, convert,
  -- true when the bucket's old form was folded into u (switch.go: counters
  -- of another geometry in key, entries of the log log_key; nil: none to
  -- look at), which C.convert must then write, and has_g, whether key
  -- records its geometry (field g). A counter from the future
  -- (j > c: Redis TIME stepped back since it was written, e.g. a failover
  -- to a host whose clock is behind) counts in u[n], as if admitted now:
  -- over-counting is the safe side, and its units stay counted until the
  -- clock passes it (the embedded backends refuse to admit instead; see
  -- ClockStepTolerance). One in counter c's own field is taken over by
  -- counter c (own), so C.add never drops its units.
  function C.read(key, now, window, n, log_key)
    local span = window / (n - 1)
    local c = math.floor(now / span)
    local r = now - c * span
    if r < 0 then c, r = c - 1, r + span elseif r >= span then c, r = c + 1, r - span end
    local fields = {'g'}
    for p = 0, n - 1 do fields[p + 2] = p end
    local vals = redis.call('HMGET', key, unpack(fields))
    local u = {}
    for i = 1, n do u[i] = 0 end
    local own, convert = 0, false
    if vals[1] and vals[1] ~= struct.pack('<dd', span, n) then
      convert = true -- another geometry's counters
      for _, ch in ipairs(C.chunks(key, now)) do fold(u, c, n, span, ch[1], ch[2]) end
    else
      for p = 0, n - 1 do
        local v = vals[p + 2]
        if v and #v == 16 then
          local sj, su = struct.unpack('<dd', v)
          if sj > c then
            u[n] = u[n] + su
            if p == c % n then own = own + su end
          elseif sj > c - n then
            u[sj - c + n] = u[sj - c + n] + su
            if sj == c then own = own + su end
          end
        end
      end
    end
    if log_key and from_log(u, log_key, c, n, span) then convert = true end
    if convert then own = u[n] end
    return u, span, c, r, own, convert, vals[1] ~= false
  end

  -- C.convert(key, log_key, u, span, c, n, window): replaces the bucket's
  -- old form (C.read's convert) by the counters u: key holds them and its
  -- geometry, log_key (if any) is deleted
  function C.convert(key, log_key, u, span, c, n, window)
    redis.call('DEL', key)
    local h = {'g', struct.pack('<dd', span, n)}
    for i = 1, n do
      if u[i] > 0 then
        h[#h + 1] = (c - n + i) % n
        h[#h + 1] = struct.pack('<dd', c - n + i, u[i])
      end
    end
    redis.call('HSET', key, unpack(h))
    redis.call('PEXPIRE', key, math.floor((window + span) / 1000) + 1 + TTL_MARGIN_MS)
    if log_key then redis.call('DEL', log_key) end
  end

  -- C.chunks(ck, now): the counters of counter hash ck as the usage
  -- chunks of an old form (switch.go), {at, units} ascending by at: each
  -- counter's units stamped at its last µs (at most now), or at now when
  -- the hash does not say its geometry (written before trendfetch
  -- recorded it); an empty list when ck does not exist
  function C.chunks(ck, now)
    local all = redis.call('HGETALL', ck)
    local span
    for k = 1, #all, 2 do
      if all[k] == 'g' and #all[k + 1] == 16 then span = struct.unpack('<dd', all[k + 1]) end
    end
    local list = {}
    for k = 1, #all, 2 do
      local v = all[k + 1]
      if all[k] ~= 'g' and #v == 16 then
        local sj, su = struct.unpack('<dd', v)
        if su > 0 then
          local at = now
          if span and (sj + 1) * span - 1 < now then at = (sj + 1) * span - 1 end
          list[#list + 1] = {at, su}
        end
      end
    end
    table.sort(list, function(a, b) return a[1] < b[1] end)
    return list
  end

  -- C.to_log(key, ck, now, keep_ms): appends the counters of ck (a log
  -- bucket's old form, C.chunks) to the log key as entries, each after the
  -- newest, keeps the log keep_ms and deletes ck; false when ck holds none
  function C.to_log(key, ck, now, keep_ms)
    local chunks = C.chunks(ck, now)
    if #chunks == 0 then return false end
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local total, newest = 0, 0
    if last[1] then total, newest = parse(last[1]), tonumber(last[2]) end
    local z = {}
    for _, ch in ipairs(chunks) do
      local at = ch[1]
      if at <= newest then at = newest + 1 end
      total, newest = total + ch[2], at
      z[#z + 1] = at
      z[#z + 1] = string.format('%016d:%d', total, ch[2])
    end
    for j = 1, #z, 1000 do redis.call('ZADD', key, unpack(z, j, math.min(j + 999, #z))) end
    redis.call('PEXPIRE', key, keep_ms)
    redis.call('DEL', ck)
    return true
  end

  -- fold(u, c, n, span, at, units): adds units stamped at to the counter
  -- containing it (one after counter c counts in c; one before c-n+1 has
  -- left the window)
  function fold(u, c, n, span, at, units)
    local i = math.floor(at / span) - c + n
    if i > n then i = n end
    if i >= 1 then u[i] = u[i] + units end
  end

  -- from_log(u, log_key, c, n, span): adds the entries of log log_key
  -- from counter c-n+1 on to the counters containing them (exact: n + 1
  -- O(log m) lookups of the running total at the counters' starts);
  -- false when the log is empty
  function from_log(u, log_key, c, n, span)
    local last = redis.call('ZRANGE', log_key, -1, -1)
    if not last[1] then return false end
    local total = parse(last[1])
    local function base(t) -- cum before the first entry with score >= t
      local f = redis.call('ZRANGEBYSCORE', log_key, fmt(t), '+inf', 'LIMIT', 0, 1)
      if not f[1] then return total end
      local cum, cost = parse(f[1])
      return cum - cost
    end
    local prev = base((c - n + 1) * span)
    for i = 1, n do
      local nxt = total
      if i < n then nxt = base((c - n + 1 + i) * span) end
      u[i] = u[i] + nxt - prev
      prev = nxt
    end
    return true
  end

  -- sum(u, from, n): u[from] + .. + u[n]
  local function sum(u, from, n)
    local s = 0
    for i = from, n do s = s + u[i] end
    return s
  end

  -- weighted(old, ov, span): the oldest counter's share, old*ov/span
  -- (the same doubles as counterSpec.weighted)
  local function weighted(old, ov, span) return old * ov / span end

  -- C.retry(u, n, span, r, limit, cost): µs after now until a call of
  -- cost fits the estimate (counterWindow.retryUS; only called on denial)
  function C.retry(u, n, span, r, limit, cost)
    for k = 0, n - 1 do
      local old = u[k + 1]
      local room = limit - sum(u, k + 2, n) - cost
      if room >= 0 then
        local r0 = 0
        if k == 0 then r0 = r end
        local rr = r0
        if old > 0 then
          local ovmax = span - 1
          local f = room * span / old
          if f < ovmax then ovmax = math.floor(f) end
          rr = span - 1 - ovmax
          if rr < r0 then rr = r0 end
        end
        while rr < span - 1 and weighted(old, span - 1 - rr, span) > room do rr = rr + 1 end
        while rr > r0 and weighted(old, span - rr, span) <= room do rr = rr - 1 end
        return k * span + rr - r
      end
    end
    return n * span
  end

  -- C.estimate(u, n, span, r): full (the counters wholly inside), the
  -- oldest one's weighted share, and the estimate rounded up
  function C.estimate(u, n, span, r)
    local full = sum(u, 2, n)
    local w = weighted(u[1], span - 1 - r, span)
    return full, w, full + math.ceil(w)
  end

  -- C.add(key, n, span, c, units, window, has_g): sets counter c to units
  -- (its new total: C.read's own plus the cost), records the geometry
  -- (field g: span, n) unless the key has it, and keeps the key window +
  -- span + TTL_MARGIN_MS past now
  function C.add(key, n, span, c, units, window, has_g)
    if has_g then
      redis.call('HSET', key, c % n, struct.pack('<dd', c, units))
    else
      redis.call('HSET', key, c % n, struct.pack('<dd', c, units), 'g', struct.pack('<dd', span, n))
    end
    redis.call('PEXPIRE', key, math.floor((window + span) / 1000) + 1 + TTL_MARGIN_MS)
  end

  return C
end
`
