-- Rebuild the usage counters of a Redis that lost its data (engines/cluster/shared-limits.ts),
-- once: unless the mark `seeded` is there, add the counters saved in PostgreSQL to whatever is in
-- Redis, and start a new incarnation: `seeded` gets its id, `base` the incarnation and number the
-- saved counters were copied at (every replica adds back its own changes made after them), and
-- `hold` keeps limited requests waiting (limits.lua) while the replicas do so.
-- limits.lua refuses to admit a limited request while the mark is missing, so no request is
-- admitted against counters that forgot their spend.
-- ARGV[1]: JSON {p, inc, base, hold, rows: [{e, period, s, t, r}]}.
local a = cjson.decode(ARGV[1])
local P = a.p
if redis.call('EXISTS', P .. 'seeded') == 1 then return 0 end
for _, x in ipairs(a.rows) do
  local h = P .. 'u:' .. x.e .. ':' .. x.period
  if x.s ~= 0 then redis.call('HINCRBY', h, 's', x.s) end
  if x.t ~= 0 then redis.call('HINCRBY', h, 't', x.t) end
  if x.r ~= 0 then redis.call('HINCRBY', h, 'r', x.r) end
  -- a day's or month's counters expire (limits.lua sets it only on those it creates)
  if x.period ~= 'total' and redis.call('PTTL', h) == -1 then redis.call('PEXPIRE', h, 40 * 86400000) end
end
redis.call('SET', P .. 'seeded', a.inc)
-- the process these counters live in (run.lua)
redis.call('SET', P .. 'run', string.match(redis.call('INFO', 'server'), 'run_id:(%w+)'))
redis.call('SET', P .. 'base', a.base)
redis.call('DEL', P .. 'durable')
if a.hold > 0 then redis.call('SET', P .. 'hold', '1', 'PX', a.hold) end
return 1
