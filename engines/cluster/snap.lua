-- The counters of some entities at one instant (engines/cluster/shared-limits.ts read): for the
-- lease holder's copy to PostgreSQL also every entity changed since the last copy (`touched`),
-- marked dirty. One copy at a time (`copying`, the copier's token, until copied.lua or its
-- expiry), and none while the replicas add back their changes after a rebuild (`hold`): the copy
-- then holds them all. ARGV[1]: JSON {p, ents, periods, copy, token, ttl}.
-- Returns {'unseeded'} or {incarnation, seq, JSON [[e, period, s, t, r, dirty]], copying}.
local a = cjson.decode(ARGV[1])
local P = a.p
local inc = redis.call('GET', P .. 'seeded')
if not inc then return {'unseeded'} end
local seq = tonumber(redis.call('GET', P .. 'seq') or '0')
if a.copy and (redis.call('EXISTS', P .. 'hold') == 1 or not redis.call('SET', P .. 'copying', a.token, 'NX', 'PX', a.ttl)) then
  a.copy = false
end
local dirty = {}
local list = {}
for _, e in ipairs(a.ents) do list[#list + 1] = e end
if a.copy then
  for _, e in ipairs(redis.call('ZRANGE', P .. 'touched', 0, -1)) do
    if dirty[e] == nil then list[#list + 1] = e end
    dirty[e] = true
  end
end
local out = {}
local seen = {}
for _, e in ipairs(list) do
  if not seen[e] then
    seen[e] = true
    for _, per in ipairs(a.periods) do
      local f = redis.call('HMGET', P .. 'u:' .. e .. ':' .. per, 's', 't', 'r')
      if f[1] or f[2] or f[3] or dirty[e] then
        out[#out + 1] = {e, per, tonumber(f[1] or '0'), tonumber(f[2] or '0'), tonumber(f[3] or '0'), dirty[e] == true}
      end
    end
  end
end
local copying = 0
if a.copy then copying = 1 end
return {inc, seq, cjson.encode(out), copying}
