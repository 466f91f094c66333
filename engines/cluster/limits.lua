-- One request's admission across replicas, atomic (engines/cluster/shared-limits.ts).
-- ARGV[1]: JSON request. Time is Redis's own clock, so replicas with skewed clocks agree.
-- Keys (prefix P): revoked (set of revoked key ids); rb:<key> token bucket {t, l};
-- rh:<key> / rd:<key> sliding windows (sorted sets of admissions by time);
-- u:<entity>:<period> settled usage {s spend, t tokens, r requests};
-- r:<entity> reserved by requests in flight {s, t}; rs:<entity> those reservations by expiry
-- (a replica that dies mid-request leaves them; they lapse after the request timeout). Only the
-- entities a budget or token check reads (a.checks) hold reservations: no check reads the others'.
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

-- lapsed reservations of dead requests go back; only looked for when a budget or token check
-- would refuse (below): until then they only made the checks stricter
local function reclaim()
  for _, c in ipairs(a.checks) do
    local e = c.e
    local rs = P .. 'rs:' .. e
    local old = redis.call('ZRANGEBYSCORE', rs, '-inf', now)
    if #old > 0 then
      for _, m in ipairs(old) do
        local s, t = string.match(m, '^[^|]*|([^|]+)|([^|]+)$')
        -- (no -0: HINCRBY refuses "-0")
        if s ~= '0' then redis.call('HINCRBY', P .. 'r:' .. e, 's', -tonumber(s)) end
        if t ~= '0' then redis.call('HINCRBY', P .. 'r:' .. e, 't', -tonumber(t)) end
      end
      redis.call('ZREMRANGEBYSCORE', rs, '-inf', now)
    end
  end
end

-- rate: check all before taking any
local bkey = P .. 'rb:' .. a.k
local tokens, cap, per
if a.pm then
  cap = a.burst or a.pm
  per = a.pm / 60000
  local b = redis.call('HMGET', bkey, 't', 'l')
  tokens = cap
  if b[1] then tokens = math.min(cap, tonumber(b[1]) + (now - tonumber(b[2])) * per) end
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
  local used = tonumber(redis.call('HGET', P .. 'u:' .. a.k .. ':total', 'r') or '0')
  if used >= a.mr then return {'max', tostring(used), rate(false)} end
end
if a.x then return {'over', rate(false)} end

-- budgets and tokens: committed (settled + reserved) must be under each limit; a known price
-- (a.kn: media units, a quote) must fit under each budget with it
local function num(x) return tonumber(x or '0') or 0 end
local function over(committed, budget)
  if a.kn then return committed + a.s > budget end
  return committed >= budget
end
local function usage()
  for i, c in ipairs(a.checks) do
    local r = redis.call('HMGET', P .. 'r:' .. c.e, 's', 't')
    local rs, rt = num(r[1]), num(r[2])
    -- only the periods a limit of this check reads
    local none = {}
    local d, m, t = none, none, none
    if c.td or c.bd then d = redis.call('HMGET', P .. 'u:' .. c.e .. ':' .. a.day, 's', 't') end
    if c.tm or c.bm then m = redis.call('HMGET', P .. 'u:' .. c.e .. ':' .. a.month, 's', 't') end
    if c.bt then t = redis.call('HMGET', P .. 'u:' .. c.e .. ':total', 's', 't') end
    if c.td and num(d[2]) + rt >= c.td then return {'usage', i, 'td', tostring(num(d[2]) + rt), rate(false)} end
    if c.tm and num(m[2]) + rt >= c.tm then return {'usage', i, 'tm', tostring(num(m[2]) + rt), rate(false)} end
    if c.bd and over(num(d[1]) + rs, c.bd) then return {'usage', i, 'bd', tostring(num(d[1])), rate(false)} end
    if c.bm and over(num(m[1]) + rs, c.bm) then return {'usage', i, 'bm', tostring(num(m[1])), rate(false)} end
    if c.bt and over(num(t[1]) + rs, c.bt) then return {'usage', i, 'bt', tostring(num(t[1])), rate(false)} end
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

-- admitted: take the rate slot, count the request, reserve the estimate; the counters' change
-- gets the next number of this incarnation (seq), which the replica keeps until it is copied back
if a.pm then
  redis.call('HSET', bkey, 't', tokens - 1, 'l', now)
  redis.call('PEXPIRE', bkey, 86400000)
end
if a.ph then redis.call('ZADD', P .. 'rh:' .. a.k, now, a.id); redis.call('PEXPIRE', P .. 'rh:' .. a.k, 3600000) end
if a.pd then redis.call('ZADD', P .. 'rd:' .. a.k, now, a.id); redis.call('PEXPIRE', P .. 'rd:' .. a.k, 86400000) end
for _, e in ipairs(a.ents) do
  -- a day's or month's counters expire: set once, when its first request creates them (the
  -- rebuild sets it on those it writes, seed.lua and apply.lua)
  if redis.call('HINCRBY', P .. 'u:' .. e .. ':' .. a.day, 'r', 1) == 1 then redis.call('PEXPIRE', P .. 'u:' .. e .. ':' .. a.day, 3 * 86400000) end
  if redis.call('HINCRBY', P .. 'u:' .. e .. ':' .. a.month, 'r', 1) == 1 then redis.call('PEXPIRE', P .. 'u:' .. e .. ':' .. a.month, 40 * 86400000) end
  redis.call('HINCRBY', P .. 'u:' .. e .. ':total', 'r', 1)
end
if a.s > 0 or a.t > 0 then
  for _, c in ipairs(a.checks) do
    if a.s > 0 then redis.call('HINCRBY', P .. 'r:' .. c.e, 's', a.s) end
    if a.t > 0 then redis.call('HINCRBY', P .. 'r:' .. c.e, 't', a.t) end
    redis.call('ZADD', P .. 'rs:' .. c.e, now + a.ttl, a.id .. '|' .. a.s .. '|' .. a.t)
  end
end
local seq = redis.call('INCR', P .. 'seq')
-- one ZADD for every entity
local touched = {}
for _, e in ipairs(a.ents) do touched[#touched + 1] = seq; touched[#touched + 1] = e end
redis.call('ZADD', P .. 'touched', unpack(touched))
return {'ok', inc, seq, rate(true)}
