-- Appends a batch of one tenant's rows: each becomes a stream entry, its
-- request id is indexed, and its usage is added to its hour's rollup, unless
-- its row id was appended before (a re-delivered batch counts nothing twice).
-- KEYS[1]: the tenant's stream; per row i (from 0): KEYS[2+3i] seen set,
-- KEYS[3+3i] id index, KEYS[4+3i] usage rollup of the row's hour (one slot: the tenant's tag).
-- ARGV[1]: retention ms; ARGV[2]: how long a row id is remembered past its hour (ms);
-- then per row: uid, end of its hour (ms), request_id, dimension tuple,
-- cost (nano-USD), tokens in, tokens out, cache hits, n, then n stream fields and values.
-- A rollup field is a dimension tuple; its value "requests cost tokens_in tokens_out cache_hits".
-- Returns the number of rows appended.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retention = tonumber(ARGV[1])
local remember = tonumber(ARGV[2])
local minid = math.max(0, now - retention)
local expiry = {}
local cells = {}
local order = {}
local a = 3
local k = 2
local added = 0
while a <= #ARGV do
  local uid, hourEnd, rid, tuple = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3]
  local n = tonumber(ARGV[a + 8])
  local seen, index, usage = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  if redis.call('SADD', seen, uid) == 1 then
    expiry[seen] = math.max(hourEnd, now) + remember
    local id = redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', unpack(ARGV, a + 9, a + 8 + n))
    redis.call('HSET', index, rid, id)
    expiry[index] = hourEnd + retention
    expiry[usage] = hourEnd + retention
    local cell = usage .. '\0' .. tuple
    local c = cells[cell]
    if not c then
      c = { usage, tuple, 0, 0, 0, 0, 0 }
      cells[cell] = c
      order[#order + 1] = cell
    end
    c[3] = c[3] + 1
    c[4] = c[4] + tonumber(ARGV[a + 4])
    c[5] = c[5] + tonumber(ARGV[a + 5])
    c[6] = c[6] + tonumber(ARGV[a + 6])
    c[7] = c[7] + tonumber(ARGV[a + 7])
    added = added + 1
  end
  a = a + 9 + n
  k = k + 3
end
for _, cell in ipairs(order) do
  local c = cells[cell]
  local old = redis.call('HGET', c[1], c[2])
  if old then
    local i = 3
    for v in string.gmatch(old, '%S+') do
      c[i] = c[i] + tonumber(v)
      i = i + 1
    end
  end
  redis.call('HSET', c[1], c[2], string.format('%.0f %.0f %.0f %.0f %.0f', c[3], c[4], c[5], c[6], c[7]))
end
for key, at in pairs(expiry) do
  redis.call('PEXPIREAT', key, at)
end
return added
