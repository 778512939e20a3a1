-- Take up to `want` tokens from a shared token bucket (mirrors refillAndTake in src/stores/meter.ts).
-- KEYS[1] bucket hash {tokens, at}; ARGV[1] want, ARGV[2] rate (tokens/s), ARGV[3] capacity
-- Returns {granted, ms until one whole token is back (0 if some remain)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local want = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or '')
local at = tonumber(redis.call('HGET', KEYS[1], 'at') or '')
local available = capacity
if tokens and at then
  available = math.min(capacity, tokens + math.max(0, now - at) * rate / 1000)
end
local granted = math.max(0, math.min(want, math.floor(available)))
local left = available - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(left), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
local wait = 0
if left < 1 then
  wait = math.ceil((1 - left) * 1000 / rate)
end
return {granted, wait}
