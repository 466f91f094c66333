-- Settle admitted requests, a batch at once (engines/cluster/shared-limits.ts): release each one's
-- reservation (unless it already lapsed and was reclaimed), add what it actually used, give the
-- request back when it was not served. The batch is summed per entity first and each entity's
-- hash (c:<entity>, limits.lua) is read with one HMGET and written with one HSET, so a batch of
-- n requests of one key costs about the commands of one. ARGV[1]: JSON {p, list: [{id, ents,
-- day, month, b, rs, rt, s, t, served}]} (b: the reservation's lapse field, from limits.lua).
-- Returns {incarnation, seq}: the number of this change (the replica keeps it until a copy to
-- PostgreSQL holds it), or {'unseeded'}: nothing was done (the counters are being rebuilt; the
-- replica settles again once they are).
local a = cjson.decode(ARGV[1])
local P = a.p
local inc = redis.call('GET', P .. 'seeded')
if not inc then return {'unseeded'} end
local E, order = {}, {}
for _, x in ipairs(a.list) do
  for _, e in ipairs(x.ents) do
    local c = E[e]
    if not c then c = {add = {}, rel = {}}; E[e] = c; order[#order + 1] = e end
    if (x.rs > 0 or x.rt > 0) and x.b then
      local r = c.rel[x.b]
      if not r then r = {0, 0}; c.rel[x.b] = r end
      r[1] = r[1] + x.rs
      r[2] = r[2] + x.rt
    end
    if x.s > 0 or x.t > 0 or not x.served then
      for _, per in ipairs({x.day, x.month, 'total'}) do
        c.add['s|' .. per] = (c.add['s|' .. per] or 0) + x.s
        c.add['t|' .. per] = (c.add['t|' .. per] or 0) + x.t
        if not x.served then c.add['r|' .. per] = (c.add['r|' .. per] or 0) - 1 end
      end
    end
  end
end
local function num(x) return tonumber(x or '0') or 0 end
local function fmt(v) return string.format('%.17g', v) end
for _, e in ipairs(order) do
  local c = E[e]
  local f = {'rs', 'rt'}
  for b in pairs(c.rel) do f[#f + 1] = 'rs|' .. b; f[#f + 1] = 'rt|' .. b end
  for k in pairs(c.add) do f[#f + 1] = k end
  local v = redis.call('HMGET', P .. 'c:' .. e, unpack(f))
  local h = {}
  for i, k in ipairs(f) do h[k] = v[i] end
  local out, gone = {}, {}
  local rs, rt = num(h.rs), num(h.rt)
  for b, r in pairs(c.rel) do
    local fs, ft = 'rs|' .. b, 'rt|' .. b
    -- a lapsed reservation that was reclaimed (limits.lua) has nothing left to release
    if h[fs] or h[ft] then
      local ls, lt = num(h[fs]) - r[1], num(h[ft]) - r[2]
      rs, rt = rs - r[1], rt - r[2]
      if ls <= 0 and lt <= 0 then
        gone[#gone + 1] = fs; gone[#gone + 1] = ft
      else
        out[#out + 1] = fs; out[#out + 1] = fmt(ls); out[#out + 1] = ft; out[#out + 1] = fmt(lt)
      end
    end
  end
  if rs ~= num(h.rs) or rt ~= num(h.rt) then
    out[#out + 1] = 'rs'; out[#out + 1] = fmt(rs); out[#out + 1] = 'rt'; out[#out + 1] = fmt(rt)
  end
  for k, d in pairs(c.add) do
    if d ~= 0 then out[#out + 1] = k; out[#out + 1] = fmt(num(h[k]) + d) end
  end
  if #gone > 0 then redis.call('HDEL', P .. 'c:' .. e, unpack(gone)) end
  if #out > 0 then redis.call('HSET', P .. 'c:' .. e, unpack(out)) end
end
local seq = redis.call('INCR', P .. 'seq')
local touched = {}
for _, e in ipairs(order) do touched[#touched + 1] = seq; touched[#touched + 1] = e end
if #touched > 0 then redis.call('ZADD', P .. 'touched', unpack(touched)) end
return {inc, seq}
