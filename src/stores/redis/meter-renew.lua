-- Extend the leases of reservations still in flight (only those that have not lapsed).
-- KEYS[1] lease zset; ARGV[1] lease ms, ARGV[2..] ids
local t = redis.call('TIME')
local lapses = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', lapses, ARGV[i])
end
return 1
