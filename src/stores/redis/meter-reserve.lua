-- Reserve a call's worst-case cost against a spend cap, atomically.
-- KEYS[1] spend hash {settled, reserved, r:<id> = amount}; KEYS[2] lease zset {id = lapses at, ms}
-- ARGV[1] id, ARGV[2] amount, ARGV[3] cap, ARGV[4] lease ms, ARGV[5] keep-until (epoch ms)
-- Returns {admitted 0|1, settled, reserved} (numbers as strings: Lua would truncate them to integers).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- reservations whose replica stopped renewing them (crashed) give their budget back
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 500)
for _, id in ipairs(lapsed) do
  local held = redis.call('HGET', KEYS[1], 'r:' .. id)
  if held then
    redis.call('HDEL', KEYS[1], 'r:' .. id)
    redis.call('HINCRBYFLOAT', KEYS[1], 'reserved', -tonumber(held))
  end
  redis.call('ZREM', KEYS[2], id)
end
if redis.call('ZCARD', KEYS[2]) == 0 then
  -- nothing in flight: clear float drift from the running sum
  redis.call('HSET', KEYS[1], 'reserved', '0')
end

local settled = tonumber(redis.call('HGET', KEYS[1], 'settled') or '0')
local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
local amount = tonumber(ARGV[2])
local admitted = 0
if settled + reserved + amount <= tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
  reserved = tonumber(redis.call('HINCRBYFLOAT', KEYS[1], 'reserved', ARGV[2]))
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
  admitted = 1
end
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
redis.call('PEXPIREAT', KEYS[2], ARGV[5])
return {admitted, tostring(settled), tostring(reserved)}
