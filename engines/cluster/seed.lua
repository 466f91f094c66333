-- Rebuild the usage counters of a Redis that lost its data (engines/cluster/shared-limits.ts),
-- once: unless the mark `seeded` is there, add the counters saved in PostgreSQL to whatever is in
-- Redis (settles of requests that were in flight when the data went), then set the mark.
-- limits.lua refuses to admit a limited request while the mark is missing, so no request is
-- admitted against counters that forgot their spend. ARGV[1]: JSON {p, rows: [{e, period, s, t, r}]}.
local a = cjson.decode(ARGV[1])
local P = a.p
if redis.call('EXISTS', P .. 'seeded') == 1 then return 0 end
for _, x in ipairs(a.rows) do
  local h = P .. 'u:' .. x.e .. ':' .. x.period
  if x.s ~= 0 then redis.call('HINCRBY', h, 's', x.s) end
  if x.t ~= 0 then redis.call('HINCRBY', h, 't', x.t) end
  if x.r ~= 0 then redis.call('HINCRBY', h, 'r', x.r) end
end
redis.call('SET', P .. 'seeded', '1')
return 1
