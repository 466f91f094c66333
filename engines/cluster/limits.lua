-- One event-loop turn of a replica against the shared limits, atomic (engines/cluster/shared-limits.ts):
-- first the settles of requests answered since the last call, then the admissions, in order.
-- ARGV[1]: JSON {p, ttl, s: [settle], a: [admission]}. Time is Redis's own clock, so replicas with
-- skewed clocks agree. Counters are read once a call and kept in Lua; what changed is written at
-- the end, summed per counter, so n requests of one key cost about the commands of one.
-- Keys (prefix P): revoked (set of revoked key ids); rb:<key> token bucket {t, l};
-- rh:<key> / rd:<key> sliding windows (sorted sets of admissions by time);
-- u:<entity>:<period> settled usage {s spend, t tokens, r requests};
-- r:<entity> reserved by requests in flight {s, t}; rs:<entity> those reservations by expiry
-- (a replica that dies mid-request leaves them; they lapse after the request timeout). Only the
-- entities a budget or token check reads (x.checks) hold reservations: no check reads the others'.
-- seeded: this incarnation's id; seq: the number of its last counters change; touched: entities
-- changed since the last copy to PostgreSQL, by that number (snap.lua, copied.lua).
-- A settle {id, ents, re, day, month, rs, rt, s, t, served} releases its reservation on `re`
-- (unless it lapsed), adds what the request used and gives the request back when it was not served.
-- An admission checks revocation, the rate bucket and windows, max_requests, then budgets and token
-- limits of the key, its team and its organization, and reserves. Every verdict of a key with a
-- rate limit ends with {limit, remaining, reset ms} of the window the x-ratelimit-* headers
-- describe (as in embedded mode: the per_minute bucket, else the hour, else the day window), after
-- this request's slot was taken when it was admitted. x.x: refuse (per_request_max, checked by the
-- replica) after the checks that come before it.
-- Returns {incarnation, seq, verdict of each admission}: incarnation '' when Redis lost its data
-- (nothing was counted: the settles are sent again after the rebuild, seed.lua); seq 0 when no
-- counter changed. A verdict: {'ok', 1, rate} counted, {'ok', 0} a key without limits (nothing
-- counted), {'revoked'}, {'unseeded'}, {'wait', ms} (replicas adding back their changes after a
-- rebuild), or a refusal ({'rate', ...}, {'max', ...}, {'over', ...}, {'usage', ...}).
local a = cjson.decode(ARGV[1])
local P = a.p
local inc = redis.call('GET', P .. 'seeded')
local now
local function clock()
  if not now then
    local tm = redis.call('TIME')
    now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  end
  return now
end

-- counters: base (read once) plus this call's changes (written at the end)
local base, delta, order, ttl = {}, {}, {}, {}
local function get(h, f)
  local b = base[h]
  if not b then
    local v = redis.call('HMGET', h, 's', 't', 'r')
    b = { s = tonumber(v[1] or '0') or 0, t = tonumber(v[2] or '0') or 0, r = tonumber(v[3] or '0') or 0 }
    base[h] = b
  end
  local d = delta[h]
  if d then return b[f] + d[f] end
  return b[f]
end
local function add(h, f, n, life)
  if n == 0 then return end
  local d = delta[h]
  if not d then
    d = { s = 0, t = 0, r = 0 }
    delta[h] = d
    order[#order + 1] = h
  end
  d[f] = d[f] + n
  if life then ttl[h] = life end
end
local touched, touchedOrder = {}, {}
local function touch(ents)
  for _, e in ipairs(ents) do
    if not touched[e] then touched[e] = true; touchedOrder[#touchedOrder + 1] = e end
  end
end
local rsAdd, rsOrder = {}, {}
-- ZADD of score/member pairs, in parts (Lua's unpack has a stack limit)
local function zadd(z, l)
  for i = 1, #l, 1000 do redis.call('ZADD', z, unpack(l, i, math.min(i + 999, #l))) end
end

-- settles (only into counters that are there: see seed.lua)
local changed = false
if inc then
  for _, x in ipairs(a.s) do
    if x.rs > 0 or x.rt > 0 then
      for _, e in ipairs(x.re or x.ents) do
        if redis.call('ZREM', P .. 'rs:' .. e, x.id .. '|' .. x.rs .. '|' .. x.rt) == 1 then
          add(P .. 'r:' .. e, 's', -x.rs)
          add(P .. 'r:' .. e, 't', -x.rt)
        end
      end
    end
    if x.s > 0 or x.t > 0 or not x.served then
      for _, e in ipairs(x.ents) do
        for _, per in ipairs({ x.day, x.month, 'total' }) do
          local h = P .. 'u:' .. e .. ':' .. per
          add(h, 's', x.s)
          add(h, 't', x.t)
          if not x.served then add(h, 'r', -1) end
        end
      end
    end
    touch(x.ents)
    changed = true
  end
end

local hold = 0
if inc and #a.a > 0 then hold = redis.call('PTTL', P .. 'hold') end
local revoked = {}
local function isRevoked(k)
  local v = revoked[k]
  if v == nil then
    v = redis.call('SISMEMBER', P .. 'revoked', k) == 1
    revoked[k] = v
  end
  return v
end

-- the token bucket of a key: its tokens now, taken from in Lua, written at the end
local buckets, bucketOrder = {}, {}
local function bucket(x)
  local b = buckets[x.k]
  if not b then
    local cap, per = x.burst or x.pm, x.pm / 60000
    local v = redis.call('HMGET', P .. 'rb:' .. x.k, 't', 'l')
    local tokens = cap
    if v[1] then tokens = math.min(cap, tonumber(v[1]) + (clock() - tonumber(v[2])) * per) end
    b = { tokens = tokens, cap = cap, per = per, key = P .. 'rb:' .. x.k }
    buckets[x.k] = b
  end
  return b
end
-- a sliding window of a key: admissions in it (those of this call added at the end)
local wins, winOrder = {}, {}
local function window(name, k, span)
  local z = P .. name .. k
  local w = wins[z]
  if not w then
    redis.call('ZREMRANGEBYSCORE', z, '-inf', clock() - span)
    local n = redis.call('ZCARD', z)
    w = { z = z, span = span, stored = n, n = n, add = {} }
    wins[z] = w
  end
  return w
end
-- ms until a full window has room again: its oldest admission leaves
local function retryOf(w)
  if w.stored == 0 then return w.span end
  local first = redis.call('ZRANGE', w.z, 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(first[2]) + w.span - now)
end
-- the rate state the headers report ({limit, remaining, reset ms}; nil without a rate limit)
local function rate(x)
  if x.pm then
    local b = bucket(x)
    return { x.pm, math.max(0, math.floor(b.tokens)), math.ceil((b.cap - b.tokens) / b.per) }
  end
  local w, limit
  if x.ph then w, limit = window('rh:', x.k, 3600000), x.ph
  elseif x.pd then w, limit = window('rd:', x.k, 86400000), x.pd
  else return nil end
  local reset = 0
  if #w.add > 0 then reset = w.span
  elseif w.stored > 0 then reset = math.max(0, tonumber(redis.call('ZRANGE', w.z, -1, -1, 'WITHSCORES')[2]) + w.span - now) end
  return { limit, math.max(0, limit - w.n), reset }
end

-- lapsed reservations of dead requests go back; only looked for when a budget or token check
-- would refuse: until then they only made the checks stricter
local function reclaim(x)
  for _, c in ipairs(x.checks) do
    local rs = P .. 'rs:' .. c.e
    local old = redis.call('ZRANGEBYSCORE', rs, '-inf', now)
    if #old > 0 then
      local h = P .. 'r:' .. c.e
      for _, m in ipairs(old) do
        local s, t = string.match(m, '^[^|]*|([^|]+)|([^|]+)$')
        -- (no -0: HINCRBY refuses "-0")
        if s ~= '0' then redis.call('HINCRBY', h, 's', -tonumber(s)) end
        if t ~= '0' then redis.call('HINCRBY', h, 't', -tonumber(t)) end
      end
      redis.call('ZREMRANGEBYSCORE', rs, '-inf', now)
      base[h] = nil -- read again
    end
  end
end

-- budgets and tokens: committed (settled + reserved) must be under each limit; a known price
-- (x.kn: media units, a quote) must fit under each budget with it
local function usage(x, rl)
  local function over(committed, budget)
    if x.kn then return committed + x.s > budget end
    return committed >= budget
  end
  for i, c in ipairs(x.checks) do
    local r = P .. 'r:' .. c.e
    local rs, rt = get(r, 's'), get(r, 't')
    local d = P .. 'u:' .. c.e .. ':' .. x.day
    local m = P .. 'u:' .. c.e .. ':' .. x.month
    local t = P .. 'u:' .. c.e .. ':total'
    if c.td and get(d, 't') + rt >= c.td then return { 'usage', i, 'td', tostring(get(d, 't') + rt), rl() } end
    if c.tm and get(m, 't') + rt >= c.tm then return { 'usage', i, 'tm', tostring(get(m, 't') + rt), rl() } end
    if c.bd and over(get(d, 's') + rs, c.bd) then return { 'usage', i, 'bd', tostring(get(d, 's')), rl() } end
    if c.bm and over(get(m, 's') + rs, c.bm) then return { 'usage', i, 'bm', tostring(get(m, 's')), rl() } end
    if c.bt and over(get(t, 's') + rs, c.bt) then return { 'usage', i, 'bt', tostring(get(t, 's')), rl() } end
  end
  return nil
end

local function admit(x)
  if isRevoked(x.k) then return { 'revoked' } end
  if not x.lim then return { 'ok', 0 } end
  -- counters of a Redis that lost its data are rebuilt from PostgreSQL first (seed.lua), and the
  -- replicas then get a moment (P..hold) to add back what they settled since the last copy
  if not inc then return { 'unseeded' } end
  if hold > 0 then return { 'wait', hold } end
  clock()
  local rl = function() return rate(x) end
  -- rate: check all before taking any
  local b
  if x.pm then
    b = bucket(x)
    if b.tokens < 1 then return { 'rate', 'per_minute', math.ceil((1 - b.tokens) / b.per), rl() } end
  end
  local wh, wd
  if x.ph then
    wh = window('rh:', x.k, 3600000)
    if wh.n >= x.ph then return { 'rate', 'per_hour', retryOf(wh), rl() } end
  end
  if x.pd then
    wd = window('rd:', x.k, 86400000)
    if wd.n >= x.pd then return { 'rate', 'per_day', retryOf(wd), rl() } end
  end
  if x.mr then
    local used = get(P .. 'u:' .. x.k .. ':total', 'r')
    if used >= x.mr then return { 'max', tostring(used), rl() } end
  end
  if x.x then return { 'over', rl() } end
  if #x.checks > 0 then
    local refused = usage(x, rl)
    if refused then
      reclaim(x)
      refused = usage(x, rl)
      if refused then return refused end
    end
  end

  -- admitted: take the rate slot, count the request, reserve the estimate
  if b then
    if not b.taken then b.taken = true; bucketOrder[#bucketOrder + 1] = b end
    b.tokens = b.tokens - 1
  end
  for _, w in ipairs({ wh or false, wd or false }) do
    if w then
      if #w.add == 0 then winOrder[#winOrder + 1] = w end
      w.add[#w.add + 1] = now
      w.add[#w.add + 1] = x.id
      w.n = w.n + 1
    end
  end
  for _, e in ipairs(x.ents) do
    -- a day's or month's counters expire: set once, when a request creates them (the rebuild
    -- sets it on those it writes, seed.lua and apply.lua)
    add(P .. 'u:' .. e .. ':' .. x.day, 'r', 1, 3 * 86400000)
    add(P .. 'u:' .. e .. ':' .. x.month, 'r', 1, 40 * 86400000)
    add(P .. 'u:' .. e .. ':total', 'r', 1)
  end
  if x.s > 0 or x.t > 0 then
    for _, c in ipairs(x.checks) do
      add(P .. 'r:' .. c.e, 's', x.s)
      add(P .. 'r:' .. c.e, 't', x.t)
      local z = P .. 'rs:' .. c.e
      local l = rsAdd[z]
      if not l then l = {}; rsAdd[z] = l; rsOrder[#rsOrder + 1] = z end
      l[#l + 1] = now + a.ttl
      l[#l + 1] = x.id .. '|' .. x.s .. '|' .. x.t
    end
  end
  touch(x.ents)
  changed = true
  return { 'ok', 1, rate(x) }
end

local out = { inc or '', 0 }
for _, x in ipairs(a.a) do out[#out + 1] = admit(x) end
if not changed then return out end

-- the sums, whole numbers (HINCRBY; %d: a large number must not reach Redis as 1e+15, and a
-- zero is skipped: Lua's -0 reaches Redis as "-0", which HINCRBY refuses)
for _, h in ipairs(order) do
  local d = delta[h]
  if d.r ~= 0 then
    local v = redis.call('HINCRBY', h, 'r', string.format('%d', d.r))
    if ttl[h] and v == d.r then redis.call('PEXPIRE', h, ttl[h]) end
  end
  if d.s ~= 0 then redis.call('HINCRBY', h, 's', string.format('%d', d.s)) end
  if d.t ~= 0 then redis.call('HINCRBY', h, 't', string.format('%d', d.t)) end
end
for _, b in ipairs(bucketOrder) do
  redis.call('HSET', b.key, 't', b.tokens, 'l', now)
  redis.call('PEXPIRE', b.key, 86400000)
end
for _, w in ipairs(winOrder) do
  zadd(w.z, w.add)
  redis.call('PEXPIRE', w.z, w.span)
end
for _, z in ipairs(rsOrder) do zadd(z, rsAdd[z]) end
-- the change gets the next number of this incarnation (the replica keeps it until it is copied
-- back); one ZADD marks every entity it touched
local seq = redis.call('INCR', P .. 'seq')
local marks = {}
for _, e in ipairs(touchedOrder) do marks[#marks + 1] = seq; marks[#marks + 1] = e end
zadd(P .. 'touched', marks)
out[2] = seq
return out
