-- The lease holder committed the counters of incarnation `inc` as of `seq` to PostgreSQL
-- (engines/cluster/shared-limits.ts): entities unchanged since are no longer dirty, and replicas
-- may forget their changes up to `seq` (`durable`). Returns 0 when the incarnation is gone (Redis
-- lost its data meanwhile: the copy is stale and is redone from the new one).
-- The copier's turn (`copying`, snap.lua) ends here, and with `failed` nothing else happens.
local a = cjson.decode(ARGV[1])
local P = a.p
if redis.call('GET', P .. 'copying') == a.token then redis.call('DEL', P .. 'copying') end
if a.failed then return 1 end
if redis.call('GET', P .. 'seeded') ~= a.inc then return 0 end
redis.call('ZREMRANGEBYSCORE', P .. 'touched', '-inf', a.seq)
local d = redis.call('GET', P .. 'durable')
if not d or tonumber(d) < a.seq then redis.call('SET', P .. 'durable', a.seq) end
return 1
