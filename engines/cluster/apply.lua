-- Add back, into a rebuilt Redis, counters changes a replica made after the copy the rebuild
-- started from (engines/cluster/usage-ledger.ts), and the reservations of its requests still in
-- flight. Only into the incarnation the replica saw (another loss meanwhile: it starts over).
-- ARGV[1]: JSON {p, inc, ttl, items: [{ents, day, month, s, t, r}], res: [{id, ents, s, t}]}.
-- Returns {'ok', seq of each item} or {'changed'}.
local a = cjson.decode(ARGV[1])
local P = a.p
if redis.call('GET', P .. 'seeded') ~= a.inc then return {'changed'} end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local out = {'ok'}
for _, x in ipairs(a.items) do
  for _, e in ipairs(x.ents) do
    for _, per in ipairs({x.day, x.month, 'total'}) do
      local h = P .. 'u:' .. e .. ':' .. per
      if x.s ~= 0 then redis.call('HINCRBY', h, 's', x.s) end
      if x.t ~= 0 then redis.call('HINCRBY', h, 't', x.t) end
      if x.r ~= 0 then redis.call('HINCRBY', h, 'r', x.r) end
      if per == x.day then redis.call('PEXPIRE', h, 3 * 86400000) elseif per == x.month then redis.call('PEXPIRE', h, 40 * 86400000) end
    end
  end
  local seq = redis.call('INCR', P .. 'seq')
  for _, e in ipairs(x.ents) do redis.call('ZADD', P .. 'touched', seq, e) end
  out[#out + 1] = seq
end
for _, x in ipairs(a.res) do
  for _, e in ipairs(x.ents) do
    local m = x.id .. '|' .. x.s .. '|' .. x.t
    if redis.call('ZADD', P .. 'rs:' .. e, 'NX', now + a.ttl, m) == 1 then
      if x.s ~= 0 then redis.call('HINCRBY', P .. 'r:' .. e, 's', x.s) end
      if x.t ~= 0 then redis.call('HINCRBY', P .. 'r:' .. e, 't', x.t) end
    end
  end
end
return out
