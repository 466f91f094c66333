-- Settle one admitted request (engines/cluster/shared-limits.ts): release its reservation
-- (unless it already lapsed), add what it actually used, give the request back when it was
-- not served. ARGV[1]: JSON. Returns {incarnation, seq} of the change (the replica keeps it until
-- a copy to PostgreSQL holds it), or {'unseeded'}: nothing was done (the counters are being
-- rebuilt; the replica settles again once they are).
local a = cjson.decode(ARGV[1])
local P = a.p
local inc = redis.call('GET', P .. 'seeded')
if not inc then return {'unseeded'} end
for _, e in ipairs(a.ents) do
  if a.rs > 0 or a.rt > 0 then
    if redis.call('ZREM', P .. 'rs:' .. e, a.id .. '|' .. a.rs .. '|' .. a.rt) == 1 then
      redis.call('HINCRBYFLOAT', P .. 'r:' .. e, 's', -a.rs)
      redis.call('HINCRBYFLOAT', P .. 'r:' .. e, 't', -a.rt)
    end
  end
  for _, per in ipairs({a.day, a.month, 'total'}) do
    local h = P .. 'u:' .. e .. ':' .. per
    if a.s > 0 then redis.call('HINCRBY', h, 's', a.s) end
    if a.t > 0 then redis.call('HINCRBY', h, 't', a.t) end
    if not a.served then redis.call('HINCRBY', h, 'r', -1) end
  end
end
local seq = redis.call('INCR', P .. 'seq')
for _, e in ipairs(a.ents) do redis.call('ZADD', P .. 'touched', seq, e) end
return {inc, seq}
