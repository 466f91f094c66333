-- The per_hour / per_day windows of limits.lua, loaded in front of it as one script
-- (engines/cluster/shared-limits.ts): the functions it calls, with Redis's time `now` in ms.
-- ZADD of score/member pairs, in parts (Lua's unpack has a stack limit); limits.lua uses it too
local function zadd(z, l)
  for i = 1, #l, 1000 do redis.call('ZADD', z, unpack(l, i, math.min(i + 999, #l))) end
end

-- A sliding window of a key (rh:<key>, rd:<key>): the admissions in it, those of this call added at
-- the end. As in embedded mode (engines/gateway/limits/rate.ts): up to 10,000 an exact log (a
-- sorted set of admission times); above, 120 slices of the window (the hash <name>#: slice start ->
-- admissions; a slice counts while its start is inside the window, as embedded mode counts it).
-- The hash also keeps n, the admissions of its slices, and c: every slice starting at or before c
-- is gone. So a call reads two fields and the few slices that left the window since the last one,
-- whatever the traffic, where a log would hold (and drop) every admission of the hour or day.
-- Both are read, so a limit changed across 10,000 keeps counting what was admitted under the old.
local EXACT_MAX, SLICES = 10000, 120
local wins, winOrder = {}, {}
local function window(z, span, limit, now)
  local w = wins[z]
  if not w then
    local from = now - span
    redis.call('ZREMRANGEBYSCORE', z, '-inf', from)
    local n = redis.call('ZCARD', z)
    local width = span / SLICES
    local hz = z .. '#'
    -- the newest slice start outside the window: that slice and all before it are gone
    local cut = math.floor(from / width) * width
    local v = redis.call('HMGET', hz, 'n', 'c')
    local sn, c = tonumber(v[1] or '0') or 0, tonumber(v[2] or '')
    if c and cut > c then
      local k = (cut - c) / width
      if k > SLICES + 1 then
        -- idle for longer than the window: every slice is gone
        redis.call('DEL', hz)
        sn = 0
      else
        local fields = {}
        for i = 1, k do fields[i] = string.format('%d', c + i * width) end
        local left = redis.call('HMGET', hz, unpack(fields))
        for i = 1, k do sn = sn - (tonumber(left[i] or '0') or 0) end
        redis.call('HDEL', hz, unpack(fields))
        redis.call('HSET', hz, 'n', string.format('%d', sn), 'c', string.format('%d', cut))
      end
    end
    w = { z = z, hz = hz, span = span, width = width, cut = cut, stored = n, n = n + sn, add = {}, sliced = {} }
    wins[z] = w
  end
  w.exact = limit <= EXACT_MAX
  return w
end
-- an admission into a window
local function take(w, id, now)
  if #w.add == 0 and next(w.sliced) == nil then winOrder[#winOrder + 1] = w end
  if w.exact then
    w.add[#w.add + 1] = now
    w.add[#w.add + 1] = id
  else
    local start = math.floor(now / w.width) * w.width
    w.sliced[start] = (w.sliced[start] or 0) + 1
  end
  w.n = w.n + 1
end
-- ms until a full window has room again: its oldest admission (or slice) leaves (a refusal only)
local function retryOf(w, now)
  local oldest
  if w.stored > 0 then oldest = tonumber(redis.call('ZRANGE', w.z, 0, 0, 'WITHSCORES')[2]) end
  local fields = {}
  for i = 1, SLICES do fields[i] = string.format('%d', w.cut + i * w.width) end
  local got = redis.call('HMGET', w.hz, unpack(fields))
  for i = 1, SLICES do
    if got[i] then
      local start = w.cut + i * w.width
      if not oldest or start < oldest then oldest = start end
      break
    end
  end
  if not oldest then return w.span end
  return math.max(1, oldest + w.span - now)
end
-- this call's admissions into the windows, at the end of limits.lua
local function writeWindows()
  for _, w in ipairs(winOrder) do
    if #w.add > 0 then
      zadd(w.z, w.add)
      redis.call('PEXPIRE', w.z, w.span)
    end
    if next(w.sliced) ~= nil then
      local total = 0
      for start, n in pairs(w.sliced) do
        redis.call('HINCRBY', w.hz, string.format('%d', start), n)
        total = total + n
      end
      redis.call('HINCRBY', w.hz, 'n', total)
      redis.call('HSET', w.hz, 'c', string.format('%d', w.cut))
      redis.call('PEXPIRE', w.hz, w.span)
    end
  end
end
