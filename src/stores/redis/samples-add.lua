-- Adds one batch of scorecard samples of one tenant into its minute and hour
-- hashes, unless the batch was added before (a batch sent again after a lost
-- reply counts nothing twice).
-- KEYS[1]: the batch's seen marker; then per minute of the batch two keys: its
-- minute hash and its hour's hash (one slot: the tenant's tag).
-- ARGV[1]: how long the seen marker is kept (ms); then per minute, in KEYS
-- order: the minute hash's expiry, the hour hash's expiry (ms since the
-- epoch), n, then n triples op, field, value, each added into both hashes:
--   c  arm totals (a JSON object of numbers, sketches and maps of numbers): added figure by
--      figure; a sketch ([zeros, first bucket, counts from it]) bucket by bucket
--   t  one task [requests, cost, first, last, last_latency, session]: counts and cost add,
--      the span widens, the latest request's latency wins, the first session seen stays
--   u  a session marker: set
-- Returns 1 when added, 0 when the batch had been added before.
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 0 end

local SKETCHES = { oh = true, du = true, sdu = true }

local function merge_sketch(a, b)
  if #b == 2 then
    a[1] = a[1] + b[1]
    return a
  end
  if #a == 2 then
    b[1] = b[1] + a[1]
    return b
  end
  local firstA, firstB = a[2], b[2]
  local lastA, lastB = firstA + #a - 3, firstB + #b - 3
  local out = { a[1] + b[1], math.min(firstA, firstB) }
  for i = out[2], math.max(lastA, lastB) do
    local v = 0
    if i >= firstA and i <= lastA then v = v + a[i - firstA + 3] end
    if i >= firstB and i <= lastB then v = v + b[i - firstB + 3] end
    out[#out + 1] = v
  end
  return out
end

local function add(into, from)
  for k, v in pairs(from) do
    if SKETCHES[k] then
      into[k] = into[k] and merge_sketch(into[k], v) or v
    elseif type(v) == 'table' then
      local map = into[k]
      if type(map) ~= 'table' then map = {} end
      into[k] = add(map, v)
    else
      into[k] = (tonumber(into[k]) or 0) + v
    end
  end
  return into
end

local function merge_task(a, b)
  a[1] = a[1] + b[1]
  a[2] = a[2] + b[2]
  if b[3] < a[3] then a[3] = b[3] end
  if b[4] >= a[4] then
    a[4] = b[4]
    a[5] = b[5]
  end
  if a[6] == cjson.null and b[6] ~= cjson.null then a[6] = b[6] end
  return a
end

local function put(key, op, field, value)
  if op ~= 'u' then
    local old = redis.call('HGET', key, field)
    if old then
      if op == 'c' then
        value = cjson.encode(add(cjson.decode(old), cjson.decode(value)))
      else
        value = cjson.encode(merge_task(cjson.decode(old), cjson.decode(value)))
      end
    end
  end
  redis.call('HSET', key, field, value)
end

local a = 2
for i = 2, #KEYS, 2 do
  local minute, hour = KEYS[i], KEYS[i + 1]
  local n = tonumber(ARGV[a + 2])
  local first = a + 3
  for j = first, first + 3 * (n - 1), 3 do
    put(minute, ARGV[j], ARGV[j + 1], ARGV[j + 2])
    put(hour, ARGV[j], ARGV[j + 1], ARGV[j + 2])
  end
  redis.call('PEXPIREAT', minute, ARGV[a])
  redis.call('PEXPIREAT', hour, ARGV[a + 1])
  a = first + 3 * n
end
return 1
