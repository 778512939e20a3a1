-- Appends rows of one tenant and one UTC minute: each becomes a stream entry,
-- its request id is indexed, and its usage is added to the rollups of its
-- minute, hour and day, unless its row id was appended before (a re-delivered
-- batch counts nothing twice). A row added to an hour or day whose projections
-- were summed (a late row) deletes their marker: they no longer hold every row.
-- KEYS (one slot: the tenant's tag): 1 the tenant's stream, 2 the hour's seen
-- row ids, 3 the hour's id index, 4..6 the usage rollups of the minute, hour and
-- day, 7 and 8 the projection markers of the hour and day.
-- ARGV: 1 retention ms, 2 how long a row id is remembered past its hour (ms),
-- 3 how long a minute rollup is kept past its minute (ms), 4..6 the end (ms) of
-- the minute, hour and day, 7 the rows: per row uid, request_id, dimension tuple,
-- "cost(nano-USD) tokens_in tokens_out cache_hits", the row, the decision record,
-- every field followed by a \30 (record separator) but the last.
-- A rollup field is a dimension tuple; its value "requests cost tokens_in tokens_out cache_hits".
-- Returns the number of rows appended.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retention = tonumber(ARGV[1])
local minuteEnd, hourEnd, dayEnd = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local minid = math.max(0, now - retention)
-- rows older than the minute rollups are kept (a late batch) are in no window read from minutes
local rollups = { KEYS[5], KEYS[6] }
local expiry = { [KEYS[5]] = hourEnd + retention, [KEYS[6]] = dayEnd + retention }
if minuteEnd + tonumber(ARGV[3]) > now then
  rollups[3] = KEYS[4]
  expiry[KEYS[4]] = minuteEnd + tonumber(ARGV[3])
end
local cells = {}
local order = {}
local added = 0
local rows = ARGV[7]
local pos = 1
-- the next field of the rows, up to its separator or the end
local function field()
  local stop = string.find(rows, '\30', pos, true) or (#rows + 1)
  local f = string.sub(rows, pos, stop - 1)
  pos = stop + 1
  return f
end
while pos <= #rows do
  local uid, requestId, tuple, counts, row, decision = field(), field(), field(), field(), field(), field()
  if redis.call('SADD', KEYS[2], uid) == 1 then
    local id = redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', 'row', row, 'decision', decision)
    redis.call('HSET', KEYS[3], requestId, id)
    local c = cells[tuple]
    if not c then
      c = { 0, 0, 0, 0, 0 }
      cells[tuple] = c
      order[#order + 1] = tuple
    end
    c[1] = c[1] + 1
    local i = 2
    for v in string.gmatch(counts, '%S+') do
      c[i] = c[i] + tonumber(v)
      i = i + 1
    end
    added = added + 1
  end
end
for _, key in ipairs(rollups) do
  for _, tuple in ipairs(order) do
    local c = { unpack(cells[tuple]) }
    local old = redis.call('HGET', key, tuple)
    if old then
      local i = 1
      for v in string.gmatch(old, '%S+') do
        c[i] = c[i] + tonumber(v)
        i = i + 1
      end
    end
    redis.call('HSET', key, tuple, string.format('%.0f %.0f %.0f %.0f %.0f', c[1], c[2], c[3], c[4], c[5]))
  end
end
if added > 0 then
  -- MINID's approximate trim removes whole stream nodes only, and only when a
  -- row comes: the stream of a tenant gone quiet goes a retention after its last row
  redis.call('PEXPIREAT', KEYS[1], now + retention)
  redis.call('DEL', KEYS[7], KEYS[8])
  redis.call('PEXPIREAT', KEYS[2], math.max(hourEnd, now) + tonumber(ARGV[2]))
  redis.call('PEXPIREAT', KEYS[3], hourEnd + retention)
  for key, at in pairs(expiry) do
    redis.call('PEXPIREAT', key, at)
  end
end
return added
