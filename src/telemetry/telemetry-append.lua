-- Appends a batch of one tenant's rows: each becomes a stream entry, its
-- request id is indexed, and its usage is added to its hour's rollup, unless
-- its row id was appended before (a re-delivered batch counts nothing twice).
-- KEYS[1]: the tenant's stream; per row i (from 0): KEYS[2+3i] seen set,
-- KEYS[3+3i] id index, KEYS[4+3i] usage rollup of the row's hour (one slot: the tenant's tag).
-- ARGV[1]: retention ms; ARGV[2]: how long a row id is remembered past its hour (ms);
-- then per row: uid, end of its hour (ms), request_id, dimension tuple,
-- cost (nano-USD), tokens in, tokens out, cache hits, n, then n stream fields and values.
-- Returns the number of rows appended.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local retention = tonumber(ARGV[1])
local remember = tonumber(ARGV[2])
local minid = math.max(0, now - retention)
local a = 3
local k = 2
local added = 0
while a <= #ARGV do
  local uid, hourEnd, rid, tuple = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3]
  local cost, tin, tout, hits, n = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], tonumber(ARGV[a + 8])
  local seen, index, usage = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  if redis.call('SADD', seen, uid) == 1 then
    redis.call('PEXPIREAT', seen, math.max(hourEnd, now) + remember)
    local id = redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', unpack(ARGV, a + 9, a + 8 + n))
    redis.call('HSET', index, rid, id)
    redis.call('PEXPIREAT', index, hourEnd + retention)
    redis.call('HINCRBY', usage, tuple .. '\30r', 1)
    redis.call('HINCRBY', usage, tuple .. '\30c', cost)
    redis.call('HINCRBY', usage, tuple .. '\30i', tin)
    redis.call('HINCRBY', usage, tuple .. '\30o', tout)
    redis.call('HINCRBY', usage, tuple .. '\30h', hits)
    redis.call('PEXPIREAT', usage, hourEnd + retention)
    added = added + 1
  end
  a = a + 9 + n
  k = k + 3
end
return added
