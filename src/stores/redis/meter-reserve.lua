-- Reserve a call's worst-case cost against a spend cap, atomically.
-- KEYS[1] spend hash {period, settled, reserved, r:<id> = amount}; KEYS[2] lease zset {id = lapses at, ms}
-- ARGV[1] id, ARGV[2] amount, ARGV[3] cap, ARGV[4] lease ms, ARGV[5] period kind ('day' | 'month')
-- Returns {admitted 0|1, settled, reserved, period id, period end ms} (amounts as strings: Lua would truncate them to integers).
local now = now_ms()
local period, ends = period_of(now, ARGV[5])

if redis.call('HGET', KEYS[1], 'period') ~= period then
  -- a new period starts from zero; reservations of the ended one no longer count
  redis.call('DEL', KEYS[1], KEYS[2])
  redis.call('HSET', KEYS[1], 'period', period, 'settled', '0', 'reserved', '0')
end

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
-- the record lives exactly as long as its period, by the same clock
redis.call('PEXPIREAT', KEYS[1], ends)
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PEXPIREAT', KEYS[2], ends)
end
return {admitted, tostring(settled), tostring(reserved), period, ends}
