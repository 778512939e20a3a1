/**
 * Lua scripts of the document store. Each one changes the collection's hash
 * and publishes the change in one atomic step, so the order of the messages on
 * the channel is the order of the writes: a replica that applies the messages
 * in turn ends with exactly what Redis holds.
 *
 * Every script first checks two things and writes nothing when either fails:
 * - the write's deadline, in ms on Redis's own clock (returns -1): a caller
 *   that gave up (and answered 504) never sees its write land later;
 * - the generation marker, which must hold the generation the writer's mirror
 *   follows (returns -2): a write never lands in a Redis that lost the
 *   documents (restarted empty), where it would stand alone until the mirror
 *   is restored over it.
 */
const GUARDS = (deadline: string, marker: string, generation: string) => `
local t = redis.call('TIME')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(${deadline}) then return -1 end
if redis.call('GET', ${marker}) ~= ${generation} then return -2 end`;
const ONE_DOC_GUARDS = GUARDS('ARGV[4]', 'KEYS[3]', 'ARGV[5]');

/**
 * KEYS[1] the collection's hash, KEYS[2] the change channel, KEYS[3] the
 * generation marker; ARGV[1] the document id, ARGV[2] the document's JSON,
 * ARGV[3] the message, ARGV[4] the deadline, ARGV[5] the generation. Each
 * returns `{1, subscribers}` when it wrote (the subscribers its message
 * reached, which the writer waits to hear back from), 0 when it did not, -1
 * past the deadline, -2 on another generation; gwDocCreate returns the
 * document already there instead of 0.
 */
export const DOC_SCRIPTS = {
  gwDocPut: `${ONE_DOC_GUARDS}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, redis.call('PUBLISH', KEYS[2], ARGV[3])}`,
  gwDocCreate: `${ONE_DOC_GUARDS}
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then return current end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, redis.call('PUBLISH', KEYS[2], ARGV[3])}`,
  gwDocDelete: `${ONE_DOC_GUARDS}
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
return {1, redis.call('PUBLISH', KEYS[2], ARGV[3])}`,
} as const;

export type DocScript = keyof typeof DOC_SCRIPTS;

/** What a script returns when it wrote nothing: it reached Redis past its deadline, or Redis holds another generation. */
export const PAST_DEADLINE_REPLY = -1;
export const OTHER_GENERATION_REPLY = -2;

/**
 * Several documents in one atomic step (`putAll`), each change published as
 * its own message in order, so replicas and the reload logic see ordinary
 * puts. Keys and arguments vary in number:
 * KEYS[1] the change channel, KEYS[2] the generation marker, KEYS[2 + j] the
 * hash of the j-th document; ARGV[1] the deadline, ARGV[2] the generation,
 * then per document ARGV[3j] its id, ARGV[3j + 1] its JSON, ARGV[3j + 2] its
 * message. Returns `{1, subscribers}` (those the last message reached) when
 * it wrote, -1 or -2 as the scripts above.
 */
export const DOC_PUT_ALL_SCRIPT = `${GUARDS('ARGV[1]', 'KEYS[2]', 'ARGV[2]')}
local reached = 0
for j = 1, #KEYS - 2 do
  redis.call('HSET', KEYS[j + 2], ARGV[3 * j], ARGV[3 * j + 1])
  reached = redis.call('PUBLISH', KEYS[1], ARGV[3 * j + 2])
end
return {1, reached}`;

/** Releases the restore lease only when this replica still holds it. KEYS[1] the lease, ARGV[1] the holder. */
export const RELEASE_LEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * A replica's mirror written back into a Redis that lost the documents
 * (doc-store.ts, restore), the marker last. Fenced inside Redis: it writes
 * only while the replica still holds the restore lease and the marker is
 * still what the replica read. A restore that reaches Redis late (held in
 * transit past its lease, or sent again by the client after a reconnect,
 * where a WATCH would no longer hold) then writes nothing over another
 * replica's restore and the writes made since.
 * KEYS[1] the generation marker, KEYS[2] the lease, KEYS[3] the change
 * channel, KEYS[3 + k] the hash of the k-th collection; ARGV[1] the lease
 * holder, ARGV[2] the marker as read ('' for none), ARGV[3] the generation
 * to write, ARGV[4] the message announcing the restore, then for each
 * collection the number of its documents followed by their id and JSON.
 * Returns 1 when it wrote, 0 when it did not.
 */
export const RESTORE_SCRIPT = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[2] then return 0 end
local a = 5
for k = 4, #KEYS do
  redis.call('DEL', KEYS[k])
  for _ = 1, tonumber(ARGV[a]) do
    redis.call('HSET', KEYS[k], ARGV[a + 1], ARGV[a + 2])
    a = a + 2
  end
  a = a + 1
end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('PUBLISH', KEYS[3], ARGV[4])
return 1`;
