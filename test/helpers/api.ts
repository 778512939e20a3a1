import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { dropRedisPrefix, newRedisPrefix, startTestGateway, type Bootstrap, type TestGateway } from './gateway.js';

export interface Answer {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
}

export interface CallInit {
  /** sent as `Authorization: Bearer <key>` */
  key?: string;
  /** JSON-encoded; present = POST */
  body?: unknown;
  headers?: Record<string, string>;
}

/** One JSON call to a test gateway: GET without a body, POST with one. */
export async function call(gw: TestGateway, path: string, init: CallInit = {}): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
  if (init.key !== undefined) headers['authorization'] = `Bearer ${init.key}`;
  const res = await fetch(`${gw.url}${path}`, { method: init.body === undefined ? 'GET' : 'POST', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
}

/** The `error.message` of a gateway error answer. */
export const errorMessage = (a: Answer): string => String((a.json['error'] as Record<string, unknown> | undefined)?.['message']);

export interface ReplicaPair {
  a: TestGateway;
  b: TestGateway;
  close(): Promise<void>;
}

/** Two in-process replicas of one deployment sharing one Redis namespace; the first applies the bootstrap. */
export async function startReplicaPair(bootstrap: Bootstrap, env: Record<string, string> = {}): Promise<ReplicaPair> {
  const prefix = newRedisPrefix();
  const a = await startTestGateway({ redisPrefix: prefix, bootstrap, env });
  const b = await startTestGateway({ redisPrefix: prefix, env });
  return {
    a,
    b,
    async close() {
      await a.close();
      await b.close();
      await dropRedisPrefix(prefix);
    },
  };
}

/** A replica pair whose openai calls go to one fake OpenAI. */
export interface ReplicaPairOverFake extends ReplicaPair {
  fake: FakeVendor;
}

/** Two replicas sharing one Redis namespace, in front of one fake OpenAI; close() stops all three. */
export async function startReplicaPairOverFakeOpenAI(bootstrap: Bootstrap, env: Record<string, string> = {}): Promise<ReplicaPairOverFake> {
  const fake = await startFakeOpenAI();
  const pair = await startReplicaPair(bootstrap, { ...env, GW_UPSTREAM_OPENAI: fake.origin });
  return {
    ...pair,
    fake,
    async close() {
      await pair.close();
      await fake.close();
    },
  };
}
