-- Claims a finished rollup period for summing into projections and returns
-- its cells (HGETALL), or nil when its projections are whole already or
-- another claim holds it. A claim of the same token is taken again: a try
-- whose reply was lost (Redis slow) does not keep its own retry out.
-- KEYS (one slot): 1 the period's projection marker, 2 its rollup by every dimension.
-- ARGV: 1 the claim's token, 2 how long the claim lasts (ms).
local held = redis.call('GET', KEYS[1])
if held and held ~= 'building ' .. ARGV[1] then
  return false
end
redis.call('SET', KEYS[1], 'building ' .. ARGV[1], 'PX', ARGV[2])
return redis.call('HGETALL', KEYS[2])
