-- Settle admitted requests, a batch at once (engines/cluster/shared-limits.ts): release each one's
-- reservation (unless it already lapsed), add what it actually used, give the request back when
-- it was not served. The batch's additions are summed per counter first, so a batch of n
-- requests of one key costs about the commands of one. ARGV[1]: JSON {p, list: [{id, ents, re, day,
-- month, rs, rt, s, t, served}]}: re, the entities holding the reservation (limits.lua: those a
-- check reads; ents when absent). Returns {incarnation, seq}: the number of this change (the
-- replica keeps it until a copy to PostgreSQL holds it), or {'unseeded'}: nothing was done (the
-- counters are being rebuilt; the replica settles again once they are).
local a = cjson.decode(ARGV[1])
local P = a.p
local inc = redis.call('GET', P .. 'seeded')
if not inc then return {'unseeded'} end
local rel, relOrder = {}, {}
local add, addOrder = {}, {}
local ents, entOrder = {}, {}
for _, x in ipairs(a.list) do
  if x.rs > 0 or x.rt > 0 then
    for _, e in ipairs(x.re or x.ents) do
      if redis.call('ZREM', P .. 'rs:' .. e, x.id .. '|' .. x.rs .. '|' .. x.rt) == 1 then
        local r = rel[e]
        if not r then r = {0, 0}; rel[e] = r; relOrder[#relOrder + 1] = e end
        r[1] = r[1] + x.rs
        r[2] = r[2] + x.rt
      end
    end
  end
  for _, e in ipairs(x.ents) do
    if not ents[e] then ents[e] = true; entOrder[#entOrder + 1] = e end
    if x.s > 0 or x.t > 0 or not x.served then
      for _, per in ipairs({x.day, x.month, 'total'}) do
        local h = P .. 'u:' .. e .. ':' .. per
        local v = add[h]
        if not v then v = {0, 0, 0}; add[h] = v; addOrder[#addOrder + 1] = h end
        v[1] = v[1] + x.s
        v[2] = v[2] + x.t
        if not x.served then v[3] = v[3] - 1 end
      end
    end
  end
end
-- whole numbers (HINCRBY, cheaper than HINCRBYFLOAT); a zero is skipped: Lua's -0 reaches Redis
-- as "-0", which HINCRBY refuses, and the script would stop after the ZREMs above
for _, e in ipairs(relOrder) do
  if rel[e][1] ~= 0 then redis.call('HINCRBY', P .. 'r:' .. e, 's', -rel[e][1]) end
  if rel[e][2] ~= 0 then redis.call('HINCRBY', P .. 'r:' .. e, 't', -rel[e][2]) end
end
for _, h in ipairs(addOrder) do
  local v = add[h]
  if v[1] ~= 0 then redis.call('HINCRBY', h, 's', v[1]) end
  if v[2] ~= 0 then redis.call('HINCRBY', h, 't', v[2]) end
  if v[3] ~= 0 then redis.call('HINCRBY', h, 'r', v[3]) end
end
local seq = redis.call('INCR', P .. 'seq')
-- one ZADD for every entity
local touched = {}
for _, e in ipairs(entOrder) do touched[#touched + 1] = seq; touched[#touched + 1] = e end
if #touched > 0 then redis.call('ZADD', P .. 'touched', unpack(touched)) end
return {inc, seq}
