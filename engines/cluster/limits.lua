-- One event-loop turn of a replica against the shared limits, atomic (engines/cluster/shared-limits.ts):
-- first the settles of requests answered since the last call, then the admissions, in order.
-- Time is Redis's own clock, so replicas with skewed clocks agree. The keys it reads and writes
-- are listed in engines/cluster/README.md ("Keys in Redis"); windows.lua, the rate windows, is
-- loaded in front of it as one script.
-- ARGV[1]: JSON {p, ttl, ss: [settle shape], s: [settle], as: [admission shape], a: [admission]}:
-- what requests of one key share (its entities, limits, day and month) is a shape, sent and turned
-- into key names once a call; each request is a short array naming its shape. Counters are read
-- once a call and kept in Lua; what changed is written at the end, summed per counter, so n
-- requests of one key cost about the commands of one.
-- A settle [shape, id, rs, rt, s, t, served 0/1] (shape {ents, re, day, month}) releases its
-- reservation rs/rt on `re` (unless it lapsed), adds what the request used and gives the request
-- back when it was not served.
-- An admission [shape, id, s, t, x, kn] (shape {k, lim, pm, burst, ph, pd, mr, ents, day, month,
-- checks}) checks revocation, the rate bucket and windows, max_requests, then budgets and token
-- limits of the key, its team and its organization, and reserves on the entities a check reads.
-- Every verdict of a key with a rate limit ends with {limit, remaining, reset ms} of the window the
-- x-ratelimit-* headers describe (as in embedded mode: the per_minute bucket, else the hour, else
-- the day window), after this request's slot was taken when it was admitted. x: refuse
-- (per_request_max, checked by the replica) after the checks that come before it; kn: s is a
-- known price (media units, a quote).
-- Returns {incarnation, seq, verdict of each admission}: incarnation '' when Redis lost its data
-- (nothing was counted: the settles are sent again after the rebuild, seed.lua); seq 0 when no
-- counter changed. A verdict: {'ok', 1, rate} counted, {'ok', 0} a key without limits (nothing
-- counted), {'revoked'}, {'unseeded'}, {'wait', ms} (replicas adding back their changes after a
-- rebuild), or a refusal ({'rate', ...}, {'max', ...}, {'over', ...}, {'usage', ...}).
local a = cjson.decode(ARGV[1])
local P = a.p
-- ARGV[2], ARGV[3]: the replica's connection this call came on and its number there. The last
-- number run on each connection is kept, so a settle sent again after a call whose answer never
-- came back (timed out, connection dropped) names that call (its 8th element, [[conn, n], ...])
-- and is skipped if the call ran after all: it was counted then (shared-limits.ts send).
local C, N = ARGV[2], tonumber(ARGV[3] or '0') or 0
if C and C ~= '' then redis.call('SET', P .. 'call:' .. C, ARGV[3], 'PX', 86400000) end
local lastRun = {}
local function ranBefore(tries)
  for _, c in ipairs(tries) do
    local last = lastRun[c[1]]
    if last == nil then
      last = tonumber(redis.call('GET', P .. 'call:' .. c[1]) or '0') or 0
      lastRun[c[1]] = last
    end
    if last >= c[2] then return true end
  end
  return false
end
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

-- settles (only into counters that are there: see seed.lua)
local changed = false
if inc then
  local shapes = {}
  for i, q in ipairs(a.ss) do
    local u, rs, r = {}, {}, {}
    for _, e in ipairs(q.ents) do
      for _, per in ipairs({ q.day, q.month, 'total' }) do u[#u + 1] = P .. 'u:' .. e .. ':' .. per end
    end
    for j, e in ipairs(q.re) do rs[j] = P .. 'rs:' .. e; r[j] = P .. 'r:' .. e end
    shapes[i] = { u = u, rs = rs, r = r, ents = q.ents, s = 0, t = 0, unserved = 0 }
  end
  -- reservations are looked up and released per entity in one ZMSCORE and one ZREM (those that
  -- lapsed and were reclaimed are not released twice); what the requests used is summed per shape
  local rel, relOrder = {}, {}
  for _, x in ipairs(a.s) do
   -- (a settle an earlier call of it counted already is skipped)
   if not (x[8] and ranBefore(x[8])) then
    local q, id, xrs, xrt, xs, xt = shapes[x[1] + 1], x[2], x[3], x[4], x[5], x[6]
    if xrs > 0 or xrt > 0 then
      local m = id .. '|' .. xrs .. '|' .. xrt
      for j, z in ipairs(q.rs) do
        local l = rel[z]
        if not l then
          l = { r = q.r[j], m = {}, s = {}, t = {}, seen = {} }
          rel[z] = l
          relOrder[#relOrder + 1] = z
        end
        if not l.seen[m] then
          l.seen[m] = true
          local n = #l.m + 1
          l.m[n], l.s[n], l.t[n] = m, xrs, xrt
        end
      end
    end
    q.s = q.s + xs
    q.t = q.t + xt
    if x[7] ~= 1 then q.unserved = q.unserved + 1 end
   end
  end
  for _, z in ipairs(relOrder) do
    local l = rel[z]
    for i = 1, #l.m, 1000 do
      local last = math.min(i + 999, #l.m)
      local sc = redis.call('ZMSCORE', z, unpack(l.m, i, last))
      local gone = {}
      for k = i, last do
        if sc[k - i + 1] then
          gone[#gone + 1] = l.m[k]
          add(l.r, 's', -l.s[k])
          add(l.r, 't', -l.t[k])
        end
      end
      if #gone > 0 then redis.call('ZREM', z, unpack(gone)) end
    end
  end
  for _, q in ipairs(shapes) do
    for _, h in ipairs(q.u) do
      add(h, 's', q.s)
      add(h, 't', q.t)
      add(h, 'r', -q.unserved)
    end
    touch(q.ents)
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

-- the admission shapes, with their key names
local shapes = {}
for i, q in ipairs(a.as) do
  q.rb = P .. 'rb:' .. q.k
  q.rh = P .. 'rh:' .. q.k
  q.rd = P .. 'rd:' .. q.k
  q.total = P .. 'u:' .. q.k .. ':total'
  q.n = 0 -- admitted in this call (counted at the end)
  q.uday, q.umonth, q.utotal = {}, {}, {}
  for j, e in ipairs(q.ents) do
    q.uday[j] = P .. 'u:' .. e .. ':' .. q.day
    q.umonth[j] = P .. 'u:' .. e .. ':' .. q.month
    q.utotal[j] = P .. 'u:' .. e .. ':total'
  end
  for _, c in ipairs(q.checks) do
    c.r = P .. 'r:' .. c.e
    c.rs = P .. 'rs:' .. c.e
    c.d = P .. 'u:' .. c.e .. ':' .. q.day
    c.m = P .. 'u:' .. c.e .. ':' .. q.month
    c.t = P .. 'u:' .. c.e .. ':total'
  end
  shapes[i] = q
end

-- requests admitted in this call by key (max_requests reads its key's count)
local admitted = {}

-- the token bucket of a key: its tokens now, taken from in Lua, written at the end
local buckets, bucketOrder = {}, {}
local function bucket(q)
  local b = buckets[q.rb]
  if not b then
    local cap, per = q.burst or q.pm, q.pm / 60000
    local v = redis.call('HMGET', q.rb, 't', 'l')
    local tokens = cap
    if v[1] then tokens = math.min(cap, tonumber(v[1]) + (clock() - tonumber(v[2])) * per) end
    b = { tokens = tokens, cap = cap, per = per, key = q.rb }
    buckets[q.rb] = b
  end
  return b
end
-- the rate state the headers report ({limit, remaining, reset ms}; nil without a rate limit)
local function rate(q)
  if q.pm then
    local b = bucket(q)
    return { q.pm, math.max(0, math.floor(b.tokens)), math.ceil((b.cap - b.tokens) / b.per) }
  end
  local w, limit
  if q.ph then w, limit = window(q.rh, 3600000, q.ph, clock()), q.ph
  elseif q.pd then w, limit = window(q.rd, 86400000, q.pd, clock()), q.pd
  else return nil end
  -- (as embedded mode: until the newest admission leaves; a sliced window says the whole span)
  local reset = 0
  if #w.add > 0 or not w.exact then reset = w.span
  elseif w.stored > 0 then reset = math.max(0, tonumber(redis.call('ZRANGE', w.z, -1, -1, 'WITHSCORES')[2]) + w.span - now) end
  return { limit, math.max(0, limit - w.n), reset }
end

-- lapsed reservations of dead requests go back; only looked for when a budget or token check
-- would refuse: until then they only made the checks stricter
local function reclaim(q)
  for _, c in ipairs(q.checks) do
    local old = redis.call('ZRANGEBYSCORE', c.rs, '-inf', now)
    if #old > 0 then
      for _, m in ipairs(old) do
        local s, t = string.match(m, '^[^|]*|([^|]+)|([^|]+)$')
        -- (no -0: HINCRBY refuses "-0")
        if s ~= '0' then redis.call('HINCRBY', c.r, 's', -tonumber(s)) end
        if t ~= '0' then redis.call('HINCRBY', c.r, 't', -tonumber(t)) end
      end
      redis.call('ZREMRANGEBYSCORE', c.rs, '-inf', now)
      base[c.r] = nil -- read again
    end
  end
end

-- budgets and tokens: committed (settled + reserved) must be under each limit; a known price
-- (kn: media units, a quote) must fit under each budget with it
local function over(committed, budget, s, kn)
  if kn then return committed + s > budget end
  return committed >= budget
end
local function usage(q, s, kn)
  for i, c in ipairs(q.checks) do
    local rs, rt = get(c.r, 's'), get(c.r, 't')
    if c.td and get(c.d, 't') + rt >= c.td then return { 'usage', i, 'td', tostring(get(c.d, 't') + rt), rate(q) } end
    if c.tm and get(c.m, 't') + rt >= c.tm then return { 'usage', i, 'tm', tostring(get(c.m, 't') + rt), rate(q) } end
    if c.bd and over(get(c.d, 's') + rs, c.bd, s, kn) then return { 'usage', i, 'bd', tostring(get(c.d, 's')), rate(q) } end
    if c.bm and over(get(c.m, 's') + rs, c.bm, s, kn) then return { 'usage', i, 'bm', tostring(get(c.m, 's')), rate(q) } end
    if c.bt and over(get(c.t, 's') + rs, c.bt, s, kn) then return { 'usage', i, 'bt', tostring(get(c.t, 's')), rate(q) } end
  end
  return nil
end

local function admit(x)
  local q, id, s, t, xx, kn = shapes[x[1] + 1], x[2], x[3], x[4], x[5] == 1, x[6] == 1
  if isRevoked(q.k) then return { 'revoked' } end
  if not q.lim then return { 'ok', 0 } end
  -- counters of a Redis that lost its data are rebuilt from PostgreSQL first (seed.lua), and the
  -- replicas then get a moment (P..hold) to add back what they settled since the last copy
  if not inc then return { 'unseeded' } end
  if hold > 0 then return { 'wait', hold } end
  clock()
  -- rate: check all before taking any
  local b
  if q.pm then
    b = bucket(q)
    if b.tokens < 1 then return { 'rate', 'per_minute', math.ceil((1 - b.tokens) / b.per), rate(q) } end
  end
  local wh, wd
  if q.ph then
    wh = window(q.rh, 3600000, q.ph, clock())
    if wh.n >= q.ph then return { 'rate', 'per_hour', retryOf(wh, now), rate(q) } end
  end
  if q.pd then
    wd = window(q.rd, 86400000, q.pd, clock())
    if wd.n >= q.pd then return { 'rate', 'per_day', retryOf(wd, now), rate(q) } end
  end
  if q.mr then
    local used = get(q.total, 'r') + (admitted[q.k] or 0)
    if used >= q.mr then return { 'max', tostring(used), rate(q) } end
  end
  if xx then return { 'over', rate(q) } end
  if #q.checks > 0 then
    local refused = usage(q, s, kn)
    if refused then
      reclaim(q)
      refused = usage(q, s, kn)
      if refused then return refused end
    end
  end

  -- admitted: take the rate slot, count the request, reserve the estimate
  if b then
    if not b.taken then b.taken = true; bucketOrder[#bucketOrder + 1] = b end
    b.tokens = b.tokens - 1
  end
  if wh then take(wh, id, now) end
  if wd then take(wd, id, now) end
  q.n = q.n + 1
  admitted[q.k] = (admitted[q.k] or 0) + 1
  if s > 0 or t > 0 then
    local m = id .. '|' .. s .. '|' .. t
    for _, c in ipairs(q.checks) do
      add(c.r, 's', s)
      add(c.r, 't', t)
      local l = rsAdd[c.rs]
      if not l then l = {}; rsAdd[c.rs] = l; rsOrder[#rsOrder + 1] = c.rs end
      l[#l + 1] = now + a.ttl
      l[#l + 1] = m
    end
  end
  changed = true
  return { 'ok', 1, rate(q) }
end

local out = { inc or '', 0 }
for _, x in ipairs(a.a) do out[#out + 1] = admit(x) end
if not changed then return out end
-- the requests admitted, counted per shape
for _, q in ipairs(shapes) do
  if q.n > 0 then
    for j = 1, #q.ents do
      -- a day's or month's counters expire: set once, when a request creates them (the rebuild
      -- sets it on those it writes, seed.lua and apply.lua)
      add(q.uday[j], 'r', q.n, 3 * 86400000)
      add(q.umonth[j], 'r', q.n, 40 * 86400000)
      add(q.utotal[j], 'r', q.n)
    end
    touch(q.ents)
  end
end

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
writeWindows()
for _, z in ipairs(rsOrder) do zadd(z, rsAdd[z]) end
-- the change gets the next number of this incarnation (the replica keeps it until it is copied
-- back); one ZADD marks every entity it touched
local seq = redis.call('INCR', P .. 'seq')
local marks = {}
for _, e in ipairs(touchedOrder) do marks[#marks + 1] = seq; marks[#marks + 1] = e end
zadd(P .. 'touched', marks)
out[2] = seq
return out
