-- Checked by each replica when its connection to Redis is (re)made, before it changes any counter
-- (engines/cluster/shared-limits.ts): is this still the Redis process the counters were kept in?
-- A Redis restarted from a snapshot (RDB, or AOF not synced at each write), or a failover to a
-- replica that lagged, holds the mark `seeded` but not its latest changes. Its counters and
-- reservations are dropped with the mark, so the next request rebuilds them from PostgreSQL and
-- every replica adds back its changes after the saved ones, as after a data loss. Only once: the
-- first replica to check records the new process (`run`). ARGV[1]: JSON {p}. Returns 1 if it
-- dropped them.
local a = cjson.decode(ARGV[1])
local P = a.p
local id = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
local was = redis.call('GET', P .. 'run')
if was == id then return 0 end
redis.call('SET', P .. 'run', id)
if not was or redis.call('EXISTS', P .. 'seeded') == 0 then return 0 end
for _, pat in ipairs({'u:*', 'r:*', 'rs:*'}) do
  for _, k in ipairs(redis.call('KEYS', P .. pat)) do redis.call('DEL', k) end
end
redis.call('DEL', P .. 'seeded', P .. 'seq', P .. 'touched', P .. 'durable', P .. 'base', P .. 'hold', P .. 'copying')
return 1
