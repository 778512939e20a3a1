-- Stores a period's projections and marks them whole, if the claim still
-- stands: a late row appended since deleted the marker, and the sums, made
-- without it, are dropped.
-- KEYS (one slot): 1 the period's projection marker, 2.. its projections.
-- ARGV: 1 the claim's token, 2 the period's expiry (ms), then per projection:
-- its number of cells, then field and value per cell.
-- Returns 1 when stored, 0 when the claim was lost.
if redis.call('GET', KEYS[1]) ~= 'building ' .. ARGV[1] then
  return 0
end
local CHUNK = 500
local a = 3
for k = 2, #KEYS do
  local n = tonumber(ARGV[a])
  a = a + 1
  redis.call('DEL', KEYS[k])
  for from = 0, n - 1, CHUNK do
    local pairs = {}
    for c = from, math.min(from + CHUNK, n) - 1 do
      pairs[#pairs + 1] = ARGV[a + 2 * c]
      pairs[#pairs + 1] = ARGV[a + 2 * c + 1]
    end
    redis.call('HSET', KEYS[k], unpack(pairs))
  end
  a = a + 2 * n
  redis.call('PEXPIREAT', KEYS[k], ARGV[2])
end
redis.call('SET', KEYS[1], 'whole', 'PXAT', ARGV[2])
return 1
