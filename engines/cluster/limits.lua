-- One request's admission across replicas, atomic (engines/cluster/shared-limits.ts).
-- ARGV[1]: JSON request. Time is Redis's own clock, so replicas with skewed clocks agree.
-- Keys (prefix P): revoked (set of revoked key ids); rh:<key> / rd:<key> sliding windows (sorted
-- sets of admissions by time); c:<entity> one hash of all the entity's counters, read with one
-- HMGET and written with one HSET, so a request costs a handful of commands whatever its limits:
--   s|<period> t|<period> r|<period>  settled spend, tokens, requests (period: day:…, month:…, total)
--   day, month                        the entity's latest periods (older ones are pruned, roll())
--   rs, rt                            reserved by requests in flight (spend, tokens)
--   rs|<ms> rt|<ms>                   the part of those that lapses at Redis time <ms> (a replica
--                                     that dies mid-request leaves them; settle.lua releases them)
--   bt, bl                            the key's per_minute token bucket (tokens, last time)
-- seeded: this incarnation's id; seq: the number of its last counters change; touched: entities
-- changed since the last copy to PostgreSQL, by that number (snap.lua, copied.lua).
-- Every verdict of a key with a rate limit ends with {limit, remaining, reset ms} of the window the
-- x-ratelimit-* headers describe (as in embedded mode: the per_minute bucket, else the hour, else
-- the day window), after this request's slot was taken when it was admitted.
-- a.x: refuse (per_request_max, checked by the replica) after the checks that come before it.
local a = cjson.decode(ARGV[1])
local P = a.p
if redis.call('SISMEMBER', P .. 'revoked', a.k) == 1 then return {'revoked'} end
if not a.lim then return {'ok'} end
-- counters of a Redis that lost its data are rebuilt from PostgreSQL first (seed.lua), and the
-- replicas then get a moment (P..hold) to add back what they settled since the last copy
local inc = redis.call('GET', P .. 'seeded')
if not inc then return {'unseeded'} end
local hold = redis.call('PTTL', P .. 'hold')
if hold > 0 then return {'wait', hold} end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local day, month = a.day, a.month

-- this request's reservation lapses (its replica died) in the field of its expiry, rounded up to
-- an eighth of the ttl so that the requests of a few seconds share one field
local width = math.max(1, math.ceil(a.ttl / 8))
local b = math.ceil((now + a.ttl) / width) * width
local rsb, rtb = 'rs|' .. string.format('%d', b), 'rt|' .. string.format('%d', b)
local F = {'day', 'month', 's|' .. day, 't|' .. day, 'r|' .. day, 's|' .. month, 't|' .. month, 'r|' .. month,
  's|total', 't|total', 'r|total', 'rs', 'rt', rsb, rtb, 'bt', 'bl'}
local H, W, order = {}, {}, {}
local function load(e)
  local h = H[e]
  if h then return h end
  local v = redis.call('HMGET', P .. 'c:' .. e, unpack(F))
  h = {}
  for i, f in ipairs(F) do h[f] = v[i] end
  H[e] = h
  return h
end
local function num(x) return tonumber(x or '0') or 0 end
local function set(e, f, v)
  load(e)[f] = v
  local w = W[e]
  if not w then w = {}; W[e] = w; order[#order + 1] = e end
  w[f] = v
end

-- lapsed reservations of dead requests go back; only looked for when a budget or token check
-- would refuse (below): until then they only made the checks stricter
local function reclaim()
  for _, e in ipairs(a.ents) do
    local h = load(e)
    local all = redis.call('HGETALL', P .. 'c:' .. e)
    local gone = {}
    for i = 1, #all, 2 do
      local which, until_ = string.match(all[i], '^r([st])|(%d+)$')
      if which and tonumber(until_) <= now then
        local f = 'r' .. which
        h[f] = num(h[f]) - num(all[i + 1])
        gone[#gone + 1] = all[i]
      end
    end
    if #gone > 0 then
      redis.call('HDEL', P .. 'c:' .. e, unpack(gone))
      redis.call('HSET', P .. 'c:' .. e, 'rs', string.format('%.17g', num(h.rs)), 'rt', string.format('%.17g', num(h.rt)))
    end
  end
end

-- rate: check all before taking any
local tokens, cap, per
if a.pm then
  cap = a.burst or a.pm
  per = a.pm / 60000
  local k = load(a.k)
  tokens = cap
  if k.bt then tokens = math.min(cap, tonumber(k.bt) + (now - tonumber(k.bl)) * per) end
end
-- the rate state the headers report ({limit, remaining, reset ms}; nil without a rate limit)
local function rate(taken)
  if a.pm then
    local left = tokens
    if taken then left = left - 1 end
    return {a.pm, math.max(0, math.floor(left)), math.ceil((cap - left) / per)}
  end
  local name, limit, span
  if a.ph then name, limit, span = 'rh:', a.ph, 3600000
  elseif a.pd then name, limit, span = 'rd:', a.pd, 86400000
  else return nil end
  local z = P .. name .. a.k
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now - span)
  local n = redis.call('ZCARD', z)
  local reset = 0
  if n > 0 then reset = math.max(0, tonumber(redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')[2]) + span - now) end
  return {limit, math.max(0, limit - n), reset}
end
if a.pm and tokens < 1 then return {'rate', 'per_minute', math.ceil((1 - tokens) / per), rate(false)} end
local function window(name, limit, span)
  if not limit then return nil end
  local z = P .. name .. a.k
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now - span)
  if redis.call('ZCARD', z) >= limit then
    local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
    return math.max(1, tonumber(first[2]) + span - now)
  end
  return nil
end
local w = window('rh:', a.ph, 3600000)
if w then return {'rate', 'per_hour', w, rate(false)} end
w = window('rd:', a.pd, 86400000)
if w then return {'rate', 'per_day', w, rate(false)} end

if a.mr then
  local used = num(load(a.k)['r|total'])
  if used >= a.mr then return {'max', tostring(used), rate(false)} end
end
if a.x then return {'over', rate(false)} end

-- budgets and tokens: committed (settled + reserved) must be under each limit; a known price
-- (a.kn: media units, a quote) must fit under each budget with it
local function over(committed, budget)
  if a.kn then return committed + a.s > budget end
  return committed >= budget
end
local function usage()
  for i, c in ipairs(a.checks) do
    local h = load(c.e)
    local rs, rt = num(h.rs), num(h.rt)
    local ds, dt = num(h['s|' .. day]), num(h['t|' .. day])
    local ms, mt = num(h['s|' .. month]), num(h['t|' .. month])
    local ts = num(h['s|total'])
    if c.td and dt + rt >= c.td then return {'usage', i, 'td', tostring(dt + rt), rate(false)} end
    if c.tm and mt + rt >= c.tm then return {'usage', i, 'tm', tostring(mt + rt), rate(false)} end
    if c.bd and over(ds + rs, c.bd) then return {'usage', i, 'bd', tostring(ds), rate(false)} end
    if c.bm and over(ms + rs, c.bm) then return {'usage', i, 'bm', tostring(ms), rate(false)} end
    if c.bt and over(ts + rs, c.bt) then return {'usage', i, 'bt', tostring(ts), rate(false)} end
  end
  return nil
end
if #a.checks > 0 then
  local refused = usage()
  if refused then
    reclaim()
    refused = usage()
    if refused then return refused end
  end
end

-- a new day (or month) for this entity: the fields of periods before the previous one go (Redis
-- 7.0 has no per-field expiry); the previous one stays for the copy to PostgreSQL
local function roll(e, h)
  if h.day == day or (h.day and day < h.day) then return end
  local keep = {total = true, [day] = true, [month] = true}
  if h.day then keep[h.day] = true end
  if h.month then keep[h.month] = true end
  local gone = {}
  for _, f in ipairs(redis.call('HKEYS', P .. 'c:' .. e)) do
    local p = string.match(f, '^[str]|(.+)$')
    if p and not keep[p] then gone[#gone + 1] = f end
  end
  if #gone > 0 then redis.call('HDEL', P .. 'c:' .. e, unpack(gone)) end
  set(e, 'day', day)
  set(e, 'month', month)
end

-- admitted: take the rate slot, count the request, reserve the estimate; the counters' change
-- gets the next number of this incarnation (seq), which the replica keeps until it is copied back
if a.pm then
  set(a.k, 'bt', tokens - 1)
  set(a.k, 'bl', now)
end
if a.ph then redis.call('ZADD', P .. 'rh:' .. a.k, now, a.id); redis.call('PEXPIRE', P .. 'rh:' .. a.k, 3600000) end
if a.pd then redis.call('ZADD', P .. 'rd:' .. a.k, now, a.id); redis.call('PEXPIRE', P .. 'rd:' .. a.k, 86400000) end
local touched = {}
for _, e in ipairs(a.ents) do
  local h = load(e)
  roll(e, h)
  for _, p in ipairs({day, month, 'total'}) do set(e, 'r|' .. p, num(h['r|' .. p]) + 1) end
  if a.s > 0 or a.t > 0 then
    set(e, 'rs', num(h.rs) + a.s)
    set(e, 'rt', num(h.rt) + a.t)
    set(e, rsb, num(h[rsb]) + a.s)
    set(e, rtb, num(h[rtb]) + a.t)
  end
end
for _, e in ipairs(order) do
  local args = {}
  for f, v in pairs(W[e]) do
    args[#args + 1] = f
    if type(v) == 'number' then v = string.format('%.17g', v) end
    args[#args + 1] = v
  end
  redis.call('HSET', P .. 'c:' .. e, unpack(args))
end
local seq = redis.call('INCR', P .. 'seq')
for _, e in ipairs(a.ents) do touched[#touched + 1] = seq; touched[#touched + 1] = e end
redis.call('ZADD', P .. 'touched', unpack(touched))
return {'ok', inc, seq, string.format('%d', b), rate(true)}
