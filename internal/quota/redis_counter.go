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
// A field whose j is not the one a decision looks for holds an older
// counter and counts as 0; it is overwritten when its position comes round
// again. The hash therefore never holds more than n fields of constant
// size, whatever the limit and the call rate (TestRedisCounterMemoryUsage),
// and expires window + span + TTL_MARGIN_MS after the last admission.
//
// # Scripts
//
// The counter shares redisReserveScript, redisStatusScript and
// redisRefundScript with the log (one script decides a call charging both
// kinds of bucket, atomically); a bucket's ARGV carries slots, 0 for a log.
// A decision reads the n fields (HMGET, O(n)), and an admission writes one
// (HSET) and PEXPIREs the key. The helpers below are appended to
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

  -- C.read(key, now, window, n): the counters of a counter bucket at now.
  -- Returns u (u[1] the oldest, counter c-n+1, .. u[n] the current one,
  -- counter c), span (µs), c, r (now's offset into counter c) and own,
  -- the units C.add must keep in counter c's field. A counter from the
  -- future (j > c: Redis TIME stepped back since it was written, e.g. a
  -- failover to a host whose clock is behind) counts in u[n], as if
  -- admitted now: over-counting is the safe side, and its units stay
  -- counted until the clock passes it (the embedded backends refuse to
  -- admit instead; see ClockStepTolerance). One in counter c's own field
  -- is taken over by counter c (own), so C.add never drops its units.
  function C.read(key, now, window, n)
    local span = window / (n - 1)
    local c = math.floor(now / span)
    local r = now - c * span
    if r < 0 then c, r = c - 1, r + span elseif r >= span then c, r = c + 1, r - span end
    local fields = {}
    for p = 0, n - 1 do fields[p + 1] = p end
    local vals = redis.call('HMGET', key, unpack(fields))
    local u = {}
    for i = 1, n do u[i] = 0 end
    local own = 0
    for p = 0, n - 1 do
      local v = vals[p + 1]
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
    return u, span, c, r, own
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

  -- C.add(key, n, span, c, units, window): sets counter c to units (its
  -- new total: C.read's own plus the cost) and keeps the key window + span
  -- + TTL_MARGIN_MS past now
  function C.add(key, n, span, c, units, window)
    redis.call('HSET', key, c % n, struct.pack('<dd', c, units))
    redis.call('PEXPIRE', key, math.floor((window + span) / 1000) + 1 + TTL_MARGIN_MS)
  end

  return C
end
`
