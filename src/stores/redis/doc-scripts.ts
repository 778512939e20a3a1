/**
 * Lua scripts of the document store. Each one changes the collection's hash
 * and publishes the change in one atomic step, so the order of the messages on
 * the channel is the order of the writes: a replica that applies the messages
 * in turn ends with exactly what Redis holds.
 *
 * Every script first checks the write's deadline, in ms on Redis's own clock:
 * a script that reaches Redis past it writes nothing and returns -1, so a
 * caller that gave up (and answered 504) never sees its write land later.
 */
const PAST_DEADLINE = (argv: string) => `
local t = redis.call('TIME')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(${argv}) then return -1 end`;

/**
 * KEYS[1] the collection's hash, KEYS[2] the change channel;
 * ARGV[1] the document id, ARGV[2] the document's JSON, ARGV[3] the message,
 * ARGV[4] the deadline. Each returns 1 when it wrote, 0 when it did not, -1
 * past the deadline; gwDocCreate returns the document already there instead of 0.
 */
export const DOC_SCRIPTS = {
  gwDocPut: `${PAST_DEADLINE('ARGV[4]')}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1`,
  gwDocCreate: `${PAST_DEADLINE('ARGV[4]')}
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then return current end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1`,
  gwDocDelete: `${PAST_DEADLINE('ARGV[4]')}
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 1`,
} as const;

export type DocScript = keyof typeof DOC_SCRIPTS;

/** What a script returns when it reached Redis past its deadline and wrote nothing. */
export const PAST_DEADLINE_REPLY = -1;

/**
 * Several documents in one atomic step (`putAll`), each change published as
 * its own message in order, so replicas and the reload logic see ordinary
 * puts. Keys and arguments vary in number:
 * KEYS[1] the change channel, KEYS[1 + j] the hash of the j-th document;
 * ARGV[1] the deadline, then per document ARGV[3j - 1] its id, ARGV[3j] its
 * JSON, ARGV[3j + 1] its message. Returns 1 when it wrote, -1 past the deadline.
 */
export const DOC_PUT_ALL_SCRIPT = `${PAST_DEADLINE('ARGV[1]')}
for j = 1, #KEYS - 1 do
  redis.call('HSET', KEYS[j + 1], ARGV[3 * j - 1], ARGV[3 * j])
  redis.call('PUBLISH', KEYS[1], ARGV[3 * j + 1])
end
return 1`;
