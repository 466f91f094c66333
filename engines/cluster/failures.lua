-- One failed authentication counted across replicas (engines/cluster/shared-alerts.ts).
-- KEYS[1]: the subject's sorted set of failures by time (an IP or a token prefix).
-- ARGV: window ms, threshold, a unique member. Time is Redis's own clock.
-- Returns how many failures fall inside the window, this one included; at the threshold the
-- set is emptied, so the next report needs another `threshold` failures (as Alerts does alone).
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local window = tonumber(ARGV[1])
local threshold = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[3])
local n = redis.call('ZCARD', KEYS[1])
if n >= threshold then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], window)
end
return n
