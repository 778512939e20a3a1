-- The figures of the period Redis TIME is in.
-- KEYS[1] spend hash; ARGV[1] period kind ('day' | 'month')
-- Returns {settled, reserved, period id, period end ms}; zero when the account holds another period.
local period, ends = period_of(now_ms(), ARGV[1])
if redis.call('HGET', KEYS[1], 'period') ~= period then
  return {'0', '0', period, ends}
end
local v = redis.call('HMGET', KEYS[1], 'settled', 'reserved')
return {v[1] or '0', v[2] or '0', period, ends}
