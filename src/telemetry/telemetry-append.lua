-- Appends rows of one tenant and one UTC minute: each becomes a stream entry
-- and its request id is indexed; the usage the writer summed for them is added
-- to the rollups of their minute, hour and day and to the hour's and day's
-- projections. Rows are taken all or none: if every row id was appended
-- before (a re-delivered batch) nothing is done; if only some were, nothing
-- is done and the flags say which, so the writer sends the others with their
-- own sums. A re-delivered row is never counted twice.
-- KEYS (one slot: the tenant's tag): 1 the tenant's stream, 2 the hour's seen
-- row ids, 3 the hour's id index, 4..6 the full rollups of the minute, hour
-- and day, 7 and 8 the hour's and day's total projection, then further
-- projections, the hour's and the day's in turn (odd: hour, even: day).
-- ARGV: 1 retention ms, 2 how long a row id is remembered past its hour (ms),
-- 3 the end (ms) of the hour, 4 the number of rows; per row: uid, request_id,
-- the row, the decision record; then groups of keys taking the same cells:
-- first key, number of keys, each key's expiry (ms), number of cells, per
-- cell: field, requests, cost (nano-USD), tokens in, tokens out, cache hits.
-- A rollup field's value is "requests cost tokens_in tokens_out cache_hits".
-- A key whose expiry has passed is not written (a late row of a minute whose
-- rollup is no longer read). A period's projections are written only when
-- they hold the period from its start (its total exists, or its full rollup
-- does not yet), so a read can tell when they are whole.
-- Returns the number of rows appended, or a table of 0/1 (1: appended before).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retention = tonumber(ARGV[1])
local hourEnd = tonumber(ARGV[3])
local rows = tonumber(ARGV[4])
local uids = {}
for r = 0, rows - 1 do
  uids[r + 1] = ARGV[5 + 4 * r]
end
local seen = redis.call('SMISMEMBER', KEYS[2], unpack(uids))
local appendedBefore = 0
for _, s in ipairs(seen) do
  appendedBefore = appendedBefore + s
end
if appendedBefore == rows then
  return 0
end
if appendedBefore > 0 then
  return seen
end
-- whether the hour's (7) and day's (8) projections hold their period from its start
local whole = {}
for _, p in ipairs({ { 7, 5 }, { 8, 6 } }) do
  whole[p[1]] = redis.call('EXISTS', KEYS[p[1]]) == 1 or redis.call('EXISTS', KEYS[p[2]]) == 0
end
local projectionWhole = function(k)
  if k < 7 then
    return true
  end
  return whole[8 - k % 2]
end

local minid = math.max(0, now - retention)
redis.call('SADD', KEYS[2], unpack(uids))
local index = {}
for r = 0, rows - 1 do
  local a = 5 + 4 * r
  local id = redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', 'row', ARGV[a + 2], 'decision', ARGV[a + 3])
  index[#index + 1] = ARGV[a + 1]
  index[#index + 1] = id
end
redis.call('HSET', KEYS[3], unpack(index))
redis.call('PEXPIREAT', KEYS[2], math.max(hourEnd, now) + tonumber(ARGV[2]))
redis.call('PEXPIREAT', KEYS[3], hourEnd + retention)

local a = 5 + 4 * rows
while a <= #ARGV do
  local first, nkeys = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local expiries = a + 2
  local ncells = tonumber(ARGV[expiries + nkeys])
  local cells = expiries + nkeys + 1
  a = cells + 6 * ncells
  local fields = {}
  for c = 0, ncells - 1 do
    fields[c + 1] = ARGV[cells + 6 * c]
  end
  for k = 0, nkeys - 1 do
    local key, at = first + k, tonumber(ARGV[expiries + k])
    if at > now and projectionWhole(key) then
      local old = redis.call('HMGET', KEYS[key], unpack(fields))
      local new = {}
      local created = false
      for c = 0, ncells - 1 do
        local v = { 0, 0, 0, 0, 0 }
        if old[c + 1] then
          local i = 1
          for n in string.gmatch(old[c + 1], '%S+') do
            v[i] = tonumber(n)
            i = i + 1
          end
        else
          created = true
        end
        local d = cells + 6 * c
        for i = 1, 5 do
          v[i] = v[i] + tonumber(ARGV[d + i])
        end
        new[#new + 1] = fields[c + 1]
        new[#new + 1] = string.format('%.0f %.0f %.0f %.0f %.0f', v[1], v[2], v[3], v[4], v[5])
      end
      redis.call('HSET', KEYS[key], unpack(new))
      -- a key's expiry is its period's: set when it gains a field (so when it is made)
      if created then
        redis.call('PEXPIREAT', KEYS[key], at)
      end
    end
  end
end
return rows
