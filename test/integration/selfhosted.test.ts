import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeVllm, type FakeVllm } from '../fakes/vllm.js';
import { call, type Answer } from '../helpers/api.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, freePort } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const { bootstrap, devKey } = oneTenant('selfhost');
const BASE = 'llama-base';
const chat = (gw: TestGateway, model: string, extra: Record<string, unknown> = {}) =>
  call(gw, '/v1/chat/completions', { key: devKey, body: { model, messages: [{ role: 'user', content: 'hi' }], ...extra } });

async function destinationsFile(entries: unknown[]): Promise<string> {
  const file = join(scratchDir('gw-dest-'), 'destinations.json');
  await writeFile(file, JSON.stringify(entries));
  return file;
}

const adapter = (path: string, size_mb = 1) => ({ base_model: BASE, path, size_mb });
const loadsOf = (fake: FakeVllm) => fake.calls('/v1/load_lora_adapter').map((r) => (JSON.parse(r.body.toString()) as { lora_name: string }).lora_name);
const unloadsOf = (fake: FakeVllm) => fake.calls('/v1/unload_lora_adapter').map((r) => (JSON.parse(r.body.toString()) as { lora_name: string }).lora_name);
const errorOf = (a: Answer) => a.json['error'] as Record<string, unknown>;

async function inFlight(gw: TestGateway): Promise<number> {
  const health = await call(gw, '/healthz');
  return (health.json['overload'] as { inflight_requests: number }).inflight_requests;
}

describe('self-hosted destination with LoRA adapters', () => {
  let fake: FakeVllm;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeVllm({ models: [BASE], memoryMb: 2, apiKey: 'server-key' });
    const file = await destinationsFile([
      {
        id: 'gpu1',
        provider: 'selfhosted',
        origin: fake.origin,
        models: [BASE],
        adapter_memory_mb: 2,
        api_key: 'server-key',
        price: { input: 1, output: 2 },
        adapters: {
          sql: adapter('/adapters/sql'),
          chat: adapter('/adapters/chat'),
          summarize: adapter('/adapters/summarize'),
          translate: adapter('/adapters/translate'),
          huge: adapter('/adapters/huge', 5),
          broken: adapter('/adapters/missing-one'),
        },
      },
    ]);
    gw = await startTestGateway({ bootstrap, env: { GW_DESTINATIONS_FILE: file } });
  });
  after(async () => {
    fake.release();
    fake.releaseLoads();
    await gw?.close();
    await fake?.close();
  });

  it('the native /v1/execute route serves a self-hosted adapter too, priced at the destination', async () => {
    const answer = await call(gw, '/v1/execute', { key: devKey, body: { input: { messages: [{ role: 'user', content: 'hi' }] }, target: { model: 'sql' } } });
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json['provider'], 'selfhosted');
    assert.equal(answer.json['model'], 'sql');
    const usage = answer.json['usage'] as { tokens_in: number; tokens_out: number; cost_usd: number };
    assert.ok(usage.tokens_in > 0);
    assert.equal(usage.cost_usd, (usage.tokens_in * 1 + usage.tokens_out * 2) / 1e6);
  });

  it('loads an adapter on its first call, with the server key and no caller credential, and not again', async () => {
    const first = await chat(gw, 'sql');
    assert.equal(first.status, 200, JSON.stringify(first.json));
    assert.equal(first.json['model'], 'sql');
    assert.deepEqual(loadsOf(fake), ['sql']);
    const load = fake.calls('/v1/load_lora_adapter')[0];
    assert.deepEqual(JSON.parse(String(load?.body)), { lora_name: 'sql', lora_path: '/adapters/sql' });
    assert.equal(load?.headers['authorization'], 'Bearer server-key');
    const second = await chat(gw, 'sql');
    assert.equal(second.status, 200);
    assert.deepEqual(loadsOf(fake), ['sql']);
    const sent = fake.calls('/v1/chat/completions').at(-1);
    assert.equal((JSON.parse(String(sent?.body)) as { model: string }).model, 'sql');
    assert.equal(sent?.headers['authorization'], 'Bearer server-key');
  });

  it('evicts the least recently used adapter to stay within the adapter memory', async () => {
    assert.equal((await chat(gw, 'chat')).status, 200); // loaded: sql, chat
    assert.equal((await chat(gw, 'sql')).status, 200); // sql is now the most recent
    assert.equal((await chat(gw, 'summarize')).status, 200);
    assert.deepEqual(unloadsOf(fake), ['chat']);
    assert.deepEqual([...fake.loaded.keys()].sort(), ['sql', 'summarize']);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /gw_adapter_evictions_total\{destination="gpu1"\} 1/);
    assert.match(metrics, /gw_adapter_loads_total\{destination="gpu1",result="ok"\} 3/);
    assert.match(metrics, /gw_adapter_load_seconds_count\{destination="gpu1"\} 3/);
  });

  it('never evicts an adapter with a call in flight, even the least recently used', async () => {
    fake.hold('sql');
    const slow = chat(gw, 'sql');
    await eventually(() => fake.held === 1, 'the sql call held at the server');
    assert.equal((await chat(gw, 'summarize')).status, 200); // summarize is the most recent; sql, in flight, the least
    const unloadsBefore = unloadsOf(fake).length;
    assert.equal((await chat(gw, 'chat')).status, 200);
    assert.deepEqual(unloadsOf(fake).slice(unloadsBefore), ['summarize']);
    assert.ok(fake.loaded.has('sql'));
    fake.release();
    assert.equal((await slow).status, 200);
  });

  it('answers 503 overloaded without x-gw-error when every adapter that would have to go is in use', async () => {
    fake.hold('sql');
    const slowSql = chat(gw, 'sql');
    await eventually(() => fake.held === 1, 'the sql call held');
    fake.hold('chat');
    const slowChat = chat(gw, 'chat');
    // the sql call still waits too: both are in flight only when two are held
    await eventually(() => fake.held === 2, 'the chat call held beside the sql call');
    const shed = await chat(gw, 'translate');
    assert.equal(shed.status, 503);
    assert.equal(errorOf(shed)['type'], 'overloaded');
    assert.equal(shed.headers.get('x-gw-error'), null);
    const retry = Number(shed.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 30, `retry-after ${retry}`);
    fake.release();
    assert.equal((await slowChat).status, 200);
    assert.equal((await slowSql).status, 200);
  });

  it('loads an adapter once for concurrent first calls', async () => {
    fake.holdLoads();
    const before = await inFlight(gw);
    const calls = Array.from({ length: 5 }, () => chat(gw, 'translate'));
    await eventually(() => fake.heldLoads === 1, 'the translate load held at the server');
    await eventually(async () => (await inFlight(gw)) >= before + 5, 'all five calls in flight');
    fake.releaseLoads();
    const answers = await Promise.all(calls);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
    assert.equal(loadsOf(fake).filter((n) => n === 'translate').length, 1);
  });

  it('answers 507 adapter_unavailable for an adapter larger than the adapter memory, sending nothing', async () => {
    const received = fake.received.length;
    const loaded = [...fake.loaded.keys()];
    const answer = await chat(gw, 'huge');
    assert.equal(answer.status, 507);
    assert.equal(errorOf(answer)['type'], 'adapter_unavailable');
    assert.equal(errorOf(answer)['code'], 507);
    assert.equal(answer.headers.get('x-gw-error'), 'adapter_unavailable');
    assert.equal(fake.received.length, received);
    assert.deepEqual([...fake.loaded.keys()], loaded);
  });

  it('a /v1/execute call whose adapter no destination has room for goes on to its fallback, sending nothing for it', async () => {
    const loads = loadsOf(fake).length;
    const answer = await call(gw, '/v1/execute', { key: devKey, body: { input: { messages: [{ role: 'user', content: 'hi' }] }, target: { model: 'huge', fallbacks: [BASE] } } });
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json['model'], BASE);
    assert.equal(loadsOf(fake).length, loads);
  });

  it("relays a load the server refuses as the server's error", async () => {
    const answer = await chat(gw, 'broken');
    assert.equal(answer.status, 404);
    assert.equal(answer.json['object'], 'error');
    assert.equal(answer.json['type'], 'NotFoundError');
    assert.match(String(answer.json['message']), /No adapter found/);
    assert.equal(answer.headers.get('x-gw-error'), null);
  });

  it('serves streams with usage and accounts the cost at the configured prices', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}` },
      body: JSON.stringify({ model: BASE, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /"usage":\{"prompt_tokens":20/);
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const tokens = /gw_tokens_total\{provider="selfhosted",kind="input"\} (\d+)/.exec(metrics);
    const cost = /gw_cost_usd_total\{provider="selfhosted"\} ([\d.e-]+)/.exec(metrics);
    const input = Number(tokens?.[1]);
    assert.ok(input > 0 && input % 20 === 0, `input tokens ${input}`);
    // every call answered 20 input and 10 output tokens at $1 / $2 per million
    assert.ok(Math.abs(Number(cost?.[1]) - (input / 20) * ((20 * 1 + 10 * 2) / 1e6)) < 1e-12, `cost ${cost?.[1]}`);
  });
});

/** Two servers holding BASE behind one gateway. */
interface CheapAndDear {
  cheap: FakeVllm;
  dear: FakeVllm;
  gw: TestGateway;
  close(): Promise<void>;
}

/** A cheaper and a dearer server holding BASE, each entry with `entry`'s fields, beside `more` entries, behind one gateway with `env`. */
async function cheapAndDear(entry: Record<string, unknown>, more: unknown[] = [], env: Record<string, string> = {}): Promise<CheapAndDear> {
  const cheap = await startFakeVllm({ models: [BASE] });
  const dear = await startFakeVllm({ models: [BASE] });
  const file = await destinationsFile([
    { id: 'dear', provider: 'selfhosted', origin: dear.origin, models: [BASE], price: { input: 2, output: 2 }, ...entry },
    { id: 'cheap', provider: 'selfhosted', origin: cheap.origin, models: [BASE], price: { input: 1, output: 1 }, ...entry },
    ...more,
  ]);
  const gw = await startTestGateway({ bootstrap, env: { GW_DESTINATIONS_FILE: file, ...env } });
  return {
    cheap,
    dear,
    gw,
    async close() {
      cheap.release();
      dear.release();
      await gw.close();
      await cheap.close();
      await dear.close();
    },
  };
}

/** A call held at the cheaper server, then one at the dearer, then a third, answered once both are held; the first two are released after it. */
async function thirdWhileBothHeld({ cheap, dear, gw }: CheapAndDear): Promise<{ first: Promise<Answer>; second: Promise<Answer>; third: Answer }> {
  cheap.hold();
  const first = chat(gw, BASE);
  await eventually(() => cheap.held === 1, 'the first call at the cheaper server');
  dear.hold();
  const second = chat(gw, BASE);
  await eventually(() => dear.held === 1, 'the second call at the dearer server');
  const third = await chat(gw, BASE);
  cheap.release();
  dear.release();
  return { first, second, third };
}

describe('self-hosted destinations whose origins are at GW_UPSTREAM_MAX_INFLIGHT', () => {
  let servers: CheapAndDear;
  // each server takes more calls than its origin may have in flight: the origin's limit is the one reached
  before(async () => (servers = await cheapAndDear({ max_inflight: 4 }, [], { GW_UPSTREAM_MAX_INFLIGHT: '1' })));
  after(() => servers?.close());

  const skillHeaders = (a: Answer) => [...a.headers.keys()].filter((h) => h.startsWith('x-gw-skill-'));
  const sheds = async () => Number(/^gw_shed_total\{where="upstream_inflight"\} (\d+)$/m.exec(await (await fetch(`${servers.gw.url}/metrics`)).text())?.[1] ?? 0);

  it('one origin full: the call goes past the skills to the other server; both full: it is shed before the skills', async () => {
    const { first, second, third } = await thirdWhileBothHeld(servers);
    assert.equal(third.status, 503);
    assert.equal(errorOf(third)['type'], 'overloaded');
    assert.equal(third.headers.get('x-gw-error'), null);
    assert.deepEqual(skillHeaders(third), [], 'shed before the skills: no skill ran for it');
    assert.equal(await sheds(), 1);
    const [one, two] = [await first, await second];
    assert.deepEqual([one.status, two.status], [200, 200]);
    assert.notDeepEqual(skillHeaders(two), [], 'the second, past the full cheaper origin, was not shed before the skills: the dearer server had room');
    assert.equal(servers.dear.calls('/v1/chat/completions').length, 1);
  });
});

describe('dispatch over several self-hosted destinations', () => {
  let servers: CheapAndDear;
  let gw: TestGateway;
  before(async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    servers = await cheapAndDear({ max_inflight: 1, adapters: { sql: adapter('/a/sql') } }, [{ id: 'away', provider: 'selfhosted', origin: down, models: ['lonely-base'] }]);
    gw = servers.gw;
  });
  after(() => servers?.close());

  it('tries the cheaper destination first, skips one at its limit, and sheds 503 without x-gw-error when all are full', async () => {
    const { first, second, third } = await thirdWhileBothHeld(servers);
    assert.equal(third.status, 503);
    assert.equal(errorOf(third)['type'], 'overloaded');
    assert.equal(third.headers.get('x-gw-error'), null);
    const retry = Number(third.headers.get('retry-after'));
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 30, `retry-after ${retry}`);
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200);
    assert.equal(servers.cheap.calls('/v1/chat/completions').length, 1);
    assert.equal(servers.dear.calls('/v1/chat/completions').length, 1);
  });

  it('applies org model access: an adapter is allowed with its base model', async () => {
    const set = (models: string[] | null) => call(gw, '/api/v1/model_access/update', { key: devKey, body: { models } });
    assert.equal((await set([BASE])).status, 200);
    assert.equal((await chat(gw, 'sql')).status, 200);
    assert.equal((await set(['sql'])).status, 200);
    assert.equal((await chat(gw, 'sql')).status, 200);
    const refused = await chat(gw, BASE);
    assert.equal(refused.status, 403);
    assert.equal(errorOf(refused)['type'], 'model_not_in_scope');
    assert.equal((await set(null)).status, 200);
  });

  it('lists each reachable base model once under provider selfhosted, never adapters, in /v1/models', async () => {
    const ids = async () => ((await call(gw, '/v1/models')).json['data'] as Array<{ id: string; provider: string; owned_by: string }>).filter((m) => m.provider === 'selfhosted');
    assert.deepEqual((await ids()).map((m) => m.id).sort(), [BASE, 'lonely-base']);
    assert.ok((await ids()).every((m) => m.owned_by === 'selfhosted'));
    // the unreachable destination's model leaves the list once calls cannot connect
    for (let i = 0; i < 3; i++) assert.equal((await chat(gw, 'lonely-base')).status, 502);
    assert.deepEqual((await ids()).map((m) => m.id), [BASE]);
  });
});

describe('failover between self-hosted destinations', () => {
  let up: FakeVllm;
  let other: FakeVllm;
  let gw: TestGateway;
  before(async () => {
    up = await startFakeVllm({ models: [BASE] });
    other = await startFakeVllm({ models: [BASE] });
    // nothing listens on these: a connection to them is refused before a byte of the call is sent
    const [down1, down2] = [`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`];
    const file = await destinationsFile([
      { id: 'down', provider: 'selfhosted', origin: down1, models: [BASE, 'ghost-base', 'lonely-base'], price: { input: 1, output: 1 }, adapters: { sql: adapter('/f/sql') } },
      { id: 'up', provider: 'selfhosted', origin: up.origin, models: [BASE, 'ghost-base'], price: { input: 2, output: 2 }, adapters: { sql: adapter('/f/sql') } },
      { id: 'other', provider: 'selfhosted', origin: other.origin, models: ['ghost-base'], price: { input: 3, output: 3 } },
      { id: 'down-too', provider: 'selfhosted', origin: down2, models: ['lonely-base'], price: { input: 2, output: 2 } },
    ]);
    gw = await startTestGateway({ bootstrap, env: { GW_DESTINATIONS_FILE: file } });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
    await other?.close();
  });

  it('a destination that refuses the connection is passed over for the next one holding the model', async () => {
    const answer = await chat(gw, BASE);
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json['model'], BASE);
    assert.equal(up.calls('/v1/chat/completions').length, 1);
  });

  it('so is one whose adapter load cannot connect: the adapter is loaded at the next', async () => {
    const answer = await chat(gw, 'sql');
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.deepEqual(loadsOf(up), ['sql']);
  });

  it('a stream fails over the same way', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}` },
      body: JSON.stringify({ model: BASE, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    assert.ok((await res.text()).endsWith('data: [DONE]\n\n'));
  });

  it("a server's own answer is relayed, never failed over: it may have run the call", async () => {
    const answer = await chat(gw, 'ghost-base');
    assert.equal(answer.status, 404);
    assert.equal(answer.json['type'], 'NotFoundError');
    assert.equal(other.calls('/v1/chat/completions').length, 0);
  });

  it('when no destination holding the model can be connected to, the answer is 502 upstream_unavailable', async () => {
    const answer = await chat(gw, 'lonely-base');
    assert.equal(answer.status, 502);
    assert.equal(errorOf(answer)['type'], 'upstream_unavailable');
    assert.equal(answer.headers.get('x-gw-error'), null);
  });

  it("on /v1/execute, a model no destination could take goes on to the envelope's fallback", async () => {
    const before = up.calls('/v1/chat/completions').length;
    const answer = await call(gw, '/v1/execute', { key: devKey, body: { input: { messages: [{ role: 'user', content: 'hi' }] }, target: { model: 'lonely-base', fallbacks: [BASE] } } });
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json['model'], BASE);
    assert.equal(up.calls('/v1/chat/completions').length, before + 1);
  });
});

describe('a gateway restart', () => {
  it("rebuilds what a destination has loaded from the server's model list", async () => {
    const fake = await startFakeVllm({ models: [BASE], memoryMb: 2, preloaded: { sql: { path: '/r/sql', parent: BASE }, chat: { path: '/r/chat', parent: BASE } } });
    const file = await destinationsFile([
      { id: 'gpu1', provider: 'selfhosted', origin: fake.origin, models: [BASE], adapter_memory_mb: 2, adapters: { sql: adapter('/r/sql'), chat: adapter('/r/chat'), summarize: adapter('/r/summarize') } },
    ]);
    const gw = await startTestGateway({ bootstrap, env: { GW_DESTINATIONS_FILE: file } });
    try {
      assert.equal((await chat(gw, 'sql')).status, 200);
      assert.deepEqual(loadsOf(fake), []);
      // the rebuilt adapters count against the memory: a third one evicts the least recently used (chat)
      assert.equal((await chat(gw, 'summarize')).status, 200);
      assert.deepEqual(unloadsOf(fake), ['chat']);
      assert.deepEqual(loadsOf(fake), ['summarize']);
    } finally {
      await gw.close();
      await fake.close();
    }
  });
});

describe('the durable row of a self-hosted call', () => {
  it('names the destination and the serving route (any replica reads it)', async () => {
    const fake = await startFakeVllm({ models: [BASE], memoryMb: 4 });
    const file = await destinationsFile([{ id: 'gpu9', provider: 'selfhosted', origin: fake.origin, models: [BASE], adapter_memory_mb: 4, adapters: { sql: adapter('/adapters/sql') } }]);
    const gw = await startTestGateway({ bootstrap, redis: true, env: { GW_DESTINATIONS_FILE: file } });
    try {
      const answer = await chat(gw, 'sql');
      assert.equal(answer.status, 200);
      const id = answer.headers.get('x-gw-request-id') as string;
      let row: Record<string, unknown> | undefined;
      await eventually(async () => {
        const read = await call(gw, `/api/v1/tenant/request/${id}`, { key: devKey });
        row = read.status === 200 ? (read.json['request'] as Record<string, unknown>) : undefined;
        return row !== undefined;
      }, 'the durable row');
      assert.equal(row?.['destination_id'], 'gpu9');
      assert.equal(row?.['model_serving_route'], 'selfhosted:gpu9/sql');
      assert.equal(row?.['provider'], 'selfhosted');
    } finally {
      await gw.close();
      await fake.close();
    }
  });
});
