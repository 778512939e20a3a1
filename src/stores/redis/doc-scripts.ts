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
