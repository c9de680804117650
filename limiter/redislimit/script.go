package redislimit

import "github.com/redis/go-redis/v9"

// script decides, releases or refunds one batch. KEYS are the state keys of
// the checks; ARGV are: now in microseconds or "" for the server's TIME, "a"
// (acquire), "r" (release), "x" (abandon: release, and make a late acquire
// of the token take nothing) or "f" (refund: give back the rate and spend
// units an acquire of the same checks took), the lease token, the lease in
// microseconds (for a refund: the time since the acquire, in microseconds),
// then per check its kind ("r", "s", "c"; in an acquire, "pr", "ps" or "pc"
// for a Peek check, evaluated as the others and never written), N, Max and
// window in microseconds. It returns {denied, wait}: the 0-based index of the
// denying check or -1 (-2: the lease was abandoned, nothing taken), and the
// wait in microseconds (-1: never); a release, abandon or refund returns
// {-1, 0}.
//
// Every check is evaluated before anything is written, so a denied batch
// changes nothing; an allowed one writes the keys of its checks but the
// Peek ones. Rate and spend keys hold the GCRA theoretical arrival
// time and expire when it has passed (the bucket is full: same as absent);
// one holding anything else (another type, a value that is not a number
// within 2^53 microseconds of 1970, or of now for a clock further back)
// fails the script before it writes, as a refund does too.
// Concurrency keys are sorted sets of lease tokens scored by expiry.
//
// A refund moves a TAT back by the increment the acquire added, computed
// the same way, less the time since the acquire (during which the bucket
// may have refilled: see limiter.Batch), if anything is left, and sets the
// key's expiry to the new TAT; a TAT that ends
// at or before now is a full bucket, and its key is deleted. A key absent,
// or whose TAT is already at or before now, is left as it is. A refund may
// have one more key than checks: its marker, set for five minutes when the
// refund is carried out; a refund that finds it set (the same refund sent
// again) changes nothing.
var script = redis.NewScript(`
local function int(x) return string.format('%.0f', x) end
-- increment is the GCRA emission interval of n units of max per win
-- microseconds, rounded down, and never zero (see limiter.Limit). When
-- win * n overflows (a huge n), win * (n / max): a cost no larger than a
-- huge max still fits.
local function increment(n, max, win)
  local inc = win * n / max
  if inc == math.huge then
    inc = win * (n / max)
  end
  inc = math.floor(inc)
  if inc < 1 then
    inc = 1
  end
  return inc
end
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- tat returns the theoretical arrival time held in key, or nil when the
-- key is absent. A value that is not a number within 2^53 microseconds of
-- 1970 (the year 2255: beyond, Lua's numbers skip microseconds and a wait
-- overflows a time.Duration), or of now when now is further back (a
-- test's clock at the zero time.Time, with ClientTime, writes such times),
-- which the script never writes, fails the script (the decision fails
-- closed) rather than reading as some bucket: "nan" would read as full for
-- ever, "1e300" as spent for ever.
local function tat(key)
  local v = redis.call('GET', key)
  if not v then
    return nil
  end
  local t = tonumber(v)
  if not t or not (t > math.min(-2^53, now - 2^53) and t < 2^53) then
    error({err = 'redislimit: a rate or spend key holds a value that is not a time'})
  end
  return t
end
local token = ARGV[3]
local lease = tonumber(ARGV[4])
if ARGV[2] == 'r' then
  for i = 1, #KEYS do
    if ARGV[1 + 4 * i] == 'c' then
      redis.call('ZREM', KEYS[i], token)
    end
  end
  return {-1, 0}
end
if ARGV[2] == 'x' then
  -- An abandoned lease: its acquire failed on the client's side (a
  -- timeout) but may have run, or may still arrive. Its slot becomes a
  -- tombstone, scored by minus its expiry (a negative score is not a slot),
  -- which a late acquire of the token finds.
  for i = 1, #KEYS do
    if ARGV[1 + 4 * i] == 'c' then
      redis.call('ZADD', KEYS[i], int(-(now + lease)), token)
      local ttl = math.ceil(lease / 1000) + 1
      if redis.call('PTTL', KEYS[i]) < ttl then
        redis.call('PEXPIRE', KEYS[i], int(ttl))
      end
    end
  end
  return {-1, 0}
end
if ARGV[2] == 'f' then
  -- A refund: every rate and spend bucket gets back what the acquire took,
  -- never past full. It frees no slot. A key after the checks' keys marks
  -- the refund done, for five minutes, so that the client's retry of it
  -- (after a lost reply) gives back nothing more.
  -- Every bucket is read before anything is written: Redis keeps the
  -- writes of a script that fails midway (a key of the wrong type, a value
  -- that is not a time), and a refund that fails must change nothing.
  local n = (#ARGV - 4) / 4
  local tats = {}
  for i = 1, n do
    if ARGV[1 + 4 * i] ~= 'c' then
      tats[i] = tat(KEYS[i])
    end
  end
  if #KEYS > n and not redis.call('SET', KEYS[n + 1], '1', 'NX', 'PX', 300000) then
    return {-1, 0}
  end
  for i = 1, n do
    local b = 1 + 4 * i
    local back = increment(tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])) - math.max(lease, 0)
    local t = tats[i]
    if ARGV[b] ~= 'c' and back > 0 then
      if t and t > now then
        t = t - back
        if t > now then
          redis.call('SET', KEYS[i], int(t), 'PX', int(math.ceil((t - now) / 1000)))
        else
          redis.call('DEL', KEYS[i])
        end
      end
    end
  end
  return {-1, 0}
end
for i = 1, #KEYS do
  if ARGV[1 + 4 * i] == 'c' then
    local sc = redis.call('ZSCORE', KEYS[i], token)
    if sc and tonumber(sc) < 0 then
      return {-2, 0} -- the acquire of an abandoned lease: take nothing
    end
    if sc then
      -- The same acquire again (a client's retry after a lost reply): it
      -- was carried out, atomically, the first time.
      return {-1, 0}
    end
  end
end
local denied, wait, never = -1, 0, false
local tats = {}
for i = 1, #KEYS do
  local b = 1 + 4 * i
  local kind, n, max, win = ARGV[b], tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  if string.sub(kind, 1, 1) == 'p' then
    kind = string.sub(kind, 2) -- a peek: evaluated here, not written below
  end
  if kind == 'c' then
    local used = redis.call('ZCOUNT', KEYS[i], '(' .. int(now), '+inf')
    if used + 1 > max and wait == 0 then
      denied = i - 1
    end
  else
    local inc = increment(n, max, win)
    if n > max or inc > win then -- more than the bucket holds, however inc rounds
      if not never then
        never, denied, wait = true, i - 1, -1
      end
    else
      local t = tat(KEYS[i]) or now
      if t < now then
        t = now
      end
      tats[i] = t + inc
      local w = tats[i] - win - now
      if w > 0 and not never and w > wait then
        denied, wait = i - 1, w
      end
    end
  end
end
if denied >= 0 then
  return {denied, wait}
end
for i = 1, #KEYS do
  local kind = ARGV[1 + 4 * i]
  if kind == 'c' then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, int(now)) -- expired leases
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '(' .. int(-now), '(0') -- expired tombstones
    redis.call('ZADD', KEYS[i], int(now + lease), token)
    local ttl = math.ceil(lease / 1000) + 1
    if redis.call('PTTL', KEYS[i]) < ttl then
      redis.call('PEXPIRE', KEYS[i], int(ttl))
    end
  elseif (kind == 'r' or kind == 's') and tats[i] > now then
    redis.call('SET', KEYS[i], int(tats[i]), 'PX', int(math.ceil((tats[i] - now) / 1000)))
  end
end
return {-1, 0}
`)
