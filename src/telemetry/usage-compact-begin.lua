-- Claims a finished rollup period for summing into projections and returns
-- its cells (HGETALL), or nil when its projections are whole already or
-- another process holds the claim.
-- KEYS (one slot): 1 the period's projection marker, 2 its rollup by every dimension.
-- ARGV: 1 the claim's token, 2 how long the claim lasts (ms).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end
redis.call('SET', KEYS[1], 'building ' .. ARGV[1], 'PX', ARGV[2])
return redis.call('HGETALL', KEYS[2])
