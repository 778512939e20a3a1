import type { Deadline, StageCacheKeys, StageInput, StageResult } from '../stage.js';
import { conversationOf, type Turn } from './conversation.js';
import { digest, signatureOf } from './signature.js';

/**
 * The semantic_cache evaluator (worker side). It reads the conversation and
 * computes every key and signature whose cost grows with the prompt: the
 * scope, the exact key, and the last user turn's near-duplicate signature. It
 * cannot reach the cache store: the main thread looks the keys up
 * (cache/lookup.ts) and turns the outcome into hit or miss.
 */

/** Exact matching forgives Unicode form and whitespace only: case, punctuation and wording stay significant. */
const normalised = (text: string): string => text.normalize('NFKC').replace(/\s+/g, ' ').trim();

const turnKey = (t: Turn): string => `${t.role}\u0001${normalised(t.text)}\u0001${t.other}`;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `stream: true` at the top of the body, or in the native envelope's `execution` */
const asksStream = (json: unknown): boolean => isObj(json) && (json['stream'] === true || (isObj(json['execution']) && json['execution']['stream'] === true));

/** The request's cache keys; undefined when the body holds no conversation, 'expired' when the deadline passed first. */
export function cacheKeysOf(surface: string, json: unknown, expired: () => boolean = () => false): StageCacheKeys | 'expired' | undefined {
  const conversation = conversationOf(surface, json);
  if (conversation === undefined || conversation.turns.length === 0) return undefined;
  const { turns } = conversation;
  const scope = digest(surface, conversation.scope);
  const keys = turns.map(turnKey);
  const exact = digest(scope, ...keys);
  const stream = asksStream(json);
  const last = turns[turns.length - 1] as Turn;
  // a near duplicate is judged on plain user text; images, tool results or a prefilled reply need the exact match
  if (last.role !== 'user' || last.other !== '') return { scope, exact, stream };
  const preceding = digest(scope, ...keys.slice(0, -1));
  const near = signatureOf(last.text, { scope, preceding }, expired);
  if (near === 'expired') return near;
  return near === 'none' ? { scope, exact, stream } : { scope, exact, near, stream };
}

export function evaluateSemanticCache(input: StageInput, deadline: Deadline): StageResult {
  let json: unknown;
  try {
    json = input.json();
  } catch {
    return { outcome: 'skipped', detail: { reason: 'the body is not JSON' } };
  }
  const cache = cacheKeysOf(input.surface, json, () => deadline.expired());
  if (cache === undefined) return { outcome: 'skipped', detail: { reason: `no conversation in the ${input.surface} body` } };
  if (cache === 'expired' || deadline.expired()) return { outcome: 'ceiling_exceeded', detail: { reason: 'signature not ready by the deadline' } };
  return { outcome: 'applied', detail: { near_duplicate: cache.near !== undefined }, cache };
}
