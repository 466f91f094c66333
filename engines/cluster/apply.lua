-- Add back, into a rebuilt Redis, counters changes a replica made after the copy the rebuild
-- started from (engines/cluster/usage-ledger.ts), and the reservations of its requests still in
-- flight. Only into the incarnation the replica saw (another loss meanwhile: it starts over).
-- ARGV[1]: JSON {p, inc, items: [{ents, day, month, s, t, r}], res: [{id, ents, b, s, t}]}
-- (b: the reservation's lapse field, limits.lua).
-- Returns {'ok', seq of each item} or {'changed'}.
local a = cjson.decode(ARGV[1])
local P = a.p
if redis.call('GET', P .. 'seeded') ~= a.inc then return {'changed'} end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local out = {'ok'}
for _, x in ipairs(a.items) do
  for _, e in ipairs(x.ents) do
    local h = P .. 'c:' .. e
    for _, per in ipairs({x.day, x.month, 'total'}) do
      if x.s ~= 0 then redis.call('HINCRBY', h, 's|' .. per, x.s) end
      if x.t ~= 0 then redis.call('HINCRBY', h, 't|' .. per, x.t) end
      if x.r ~= 0 then redis.call('HINCRBY', h, 'r|' .. per, x.r) end
    end
  end
  local seq = redis.call('INCR', P .. 'seq')
  for _, e in ipairs(x.ents) do redis.call('ZADD', P .. 'touched', seq, e) end
  out[#out + 1] = seq
end
-- reservations not lapsed yet, into the field they lapse in (their settle releases them there)
for _, x in ipairs(a.res) do
  if tonumber(x.b) > now then
    for _, e in ipairs(x.ents) do
      local h = P .. 'c:' .. e
      redis.call('HINCRBY', h, 'rs', x.s)
      redis.call('HINCRBY', h, 'rt', x.t)
      redis.call('HINCRBY', h, 'rs|' .. x.b, x.s)
      redis.call('HINCRBY', h, 'rt|' .. x.b, x.t)
    end
  end
end
return out
