-- Returns every field and value of each key (HGETALL), in order, as one reply:
-- a usage read takes a few small hashes per period of its window.
-- KEYS (one slot: the tenant's tag): the hashes.
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('HGETALL', key)
end
return out
