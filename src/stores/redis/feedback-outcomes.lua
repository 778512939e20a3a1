-- The task outcomes filed under some feedback ids of one tenant.
-- KEYS: the tenant's feedback hashes, one per UTC day, oldest first (one slot: the tenant's tag).
-- ARGV: the feedback ids.
-- Returns index (from 1, into ARGV), outcome pairs for the ids that have an
-- outcome; a later day's word replaces an earlier one. Only found ids travel
-- back, and each id travels in once however many days are read.
local found = {}
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    -- in chunks: unpack has a bound on how many values it spreads
    for i = 1, #ARGV, 1000 do
      local values = redis.call('HMGET', key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
      for k = 1, #values do
        if values[k] then found[i + k - 1] = values[k] end
      end
    end
  end
end
local out = {}
for i, v in pairs(found) do
  out[#out + 1] = i
  out[#out + 1] = v
end
return out
