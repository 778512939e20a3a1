/**
 * Lua scripts of the document store. Each one changes the collection's hash
 * and publishes the change in one atomic step, so the order of the messages on
 * the channel is the order of the writes: a replica that applies the messages
 * in turn ends with exactly what Redis holds.
 *
 * KEYS[1] the collection's hash, KEYS[2] the change channel;
 * ARGV[1] the document id, ARGV[2] the document's JSON, ARGV[3] the message.
 * Each returns 1 when it wrote, 0 when it did not; gwDocCreate returns the
 * document already there instead of 0.
 */
export const DOC_SCRIPTS = {
  gwDocPut: `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1`,
  gwDocCreate: `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then return current end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1`,
  gwDocDelete: `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1`,
} as const;

export type DocScript = keyof typeof DOC_SCRIPTS;

/**
 * Several documents in one atomic step (`putAll`), each change published as
 * its own message in order, so replicas and the reload logic see ordinary
 * puts. Keys and arguments vary in number:
 * KEYS[1] the change channel, KEYS[1 + j] the hash of the j-th document;
 * ARGV[1] a deadline in ms on Redis's clock ('' for none): past it nothing is
 * written and the script returns 0; then per document ARGV[3j - 1] its id,
 * ARGV[3j] its JSON, ARGV[3j + 1] its message. Returns 1 when it wrote.
 */
export const DOC_PUT_ALL_SCRIPT = `
if ARGV[1] ~= '' then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(ARGV[1]) then return 0 end
end
for j = 1, #KEYS - 1 do
  redis.call('HSET', KEYS[j + 1], ARGV[3 * j - 1], ARGV[3 * j])
  redis.call('PUBLISH', KEYS[1], ARGV[3 * j + 1])
end
return 1`;
