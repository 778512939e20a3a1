-- End a reservation and add the call's real cost to its period.
-- KEYS[1] spend hash; KEYS[2] lease zset; ARGV[1] id, ARGV[2] cost, ARGV[3] the reservation's period id
-- A period already over (the account holds another, or nothing) is left alone.
if redis.call('HGET', KEYS[1], 'period') ~= ARGV[3] then
  return 0
end
local held = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if held then
  redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  if redis.call('ZCARD', KEYS[2]) == 0 then
    redis.call('HSET', KEYS[1], 'reserved', '0')
  else
    redis.call('HINCRBYFLOAT', KEYS[1], 'reserved', -tonumber(held))
  end
end
redis.call('HINCRBYFLOAT', KEYS[1], 'settled', ARGV[2])
return 1
