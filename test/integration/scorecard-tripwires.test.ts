import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { armFor } from '../../src/skills/arms.js';
import { startAgentModel } from '../fakes/agent-model.js';
import type { FakeVendor } from '../fakes/server.js';
import { result } from '../helpers/agent-conversation.js';
import { call } from '../helpers/api.js';
import { devKeySecret, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

/**
 * Every tripwire and warning from real traffic: agents' requests through the
 * real gateway (Redis, the skill engine's pool threads) to a fake model whose
 * work degrades when the gateway folded its context
 * (test/fakes/agent-model.ts), so the treatment arm of
 * agent_trajectory_compaction (armed by default) does worse than control.
 * Each tripwire case reads the scorecard's breaker fields, runs the breaker
 * sweep once (not waiting for its timer), and checks the key was rolled back
 * with the transition the sweep wrote, and that it stays there; each warning
 * (and a confounded comparison) is reported and changes nothing on the key.
 */

const FOLD = 'agent_trajectory_compaction';
const CANARY = 'canary:50';
const SCENARIOS = ['fail_open', 'fidelity', 'turns', 'success', 'goodput', 'ledger', 'errors', 'retries', 'slower', 'confounded'] as const;
type Scenario = (typeof SCENARIOS)[number];
const KEYS = Object.fromEntries(SCENARIOS.map((s) => [s, devKeySecret(`trip-${s}`)])) as Record<Scenario, string>;
const BOOT = { orgs: [{ org_id: 'acme', rps_cap: 100_000 }], dev_keys: SCENARIOS.map((s) => ({ org_id: 'acme', dev_key_id: `dk-${s}`, api_key: KEYS[s] })) };

type Message = Record<string, unknown>;
const READ_FILE = {
  type: 'function',
  function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' }, start: { type: 'integer' } }, required: ['path', 'start'] } },
};

/**
 * An agent's conversation: its task, `rounds` file reads each answered by a
 * result of `lines` lines, and a last user turn. `secretIn` puts a
 * `SECRET=<value>` line at the end of that round's result (past what a fold
 * keeps of a result it takes in).
 */
function conversation(rounds: number, o: { lines?: number; secretIn?: number; secret?: string; last?: string } = {}): Message[] {
  const messages: Message[] = [
    { role: 'system', content: 'You are a careful coding agent. Read files before answering.' },
    { role: 'user', content: 'Find the value of SECRET in the code base.' },
  ];
  for (let i = 0; i < rounds; i++) {
    const text = result(i, o.lines ?? 60) + (i === o.secretIn ? `\nSECRET=${o.secret ?? 'none'}` : '');
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/module${i}.ts`, start: 1 }) } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: text });
  }
  messages.push({ role: 'user', content: o.last ?? 'What is the value?' });
  return messages;
}

/** `n` session ids the canary puts in `arm` (drawn as the engine draws them) */
function sessionsIn(arm: 'treatment' | 'control', n: number, tag: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (armFor(FOLD, CANARY, `${tag}-${i}`, 'unused') === arm) out.push(`${tag}-${i}`);
  return out;
}

/** `n` single calls (`request:<id>`, sent as x-request-id without a session) the canary puts in `arm` */
function requestsIn(arm: 'treatment' | 'control', n: number, tag: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (armFor(FOLD, CANARY, undefined, `${tag}-${i}`) === arm) out.push(`request:${tag}-${i}`);
  return out;
}

interface Reply {
  content: string | null;
  toolCalls: Message[] | undefined;
}

type Json = Record<string, unknown>;

async function startGateway(upstream: FakeVendor, env: Record<string, string>): Promise<TestGateway> {
  // the sweep's timer stays out of the way: each case runs one period itself
  return startTestGateway({ bootstrap: BOOT, redis: true, env: { GW_UPSTREAM_OPENAI: upstream.origin, GW_BREAKER_SWEEP_S: '3600', ...env } });
}

/** the client side of one gateway: agents' calls, feedback, the scorecard and the key's mode */
function client(gw: TestGateway, s: Scenario) {
  const key = KEYS[s];
  return {
    /** one call of a session, or (`request:<id>`) of a single call with that request id */
    async chat(session: string, model: string, messages: Message[], tools = false, status = 200): Promise<Reply> {
      // each session's calls differ from every other's: none is a client retry of another
      const [system, ...rest] = messages;
      const own = [{ ...system, content: `${String(system?.['content'])} Session ${session}.` }, ...rest];
      const single = session.startsWith('request:');
      const headers = { 'x-gw-provider-key': 'sk-upstream', ...(single ? { 'x-request-id': session.slice('request:'.length) } : { 'x-gw-session': session }) };
      const r = await call(gw, '/v1/chat/completions', { key, headers, body: { model, messages: own, ...(tools && { tools: [READ_FILE] }) } });
      assert.equal(r.status, status, JSON.stringify(r.json));
      const message = (r.json['choices'] as Array<{ message: Json }> | undefined)?.[0]?.message ?? {};
      return { content: (message['content'] as string | null) ?? null, toolCalls: message['tool_calls'] as Message[] | undefined };
    },
    async feedback(session: string, outcome: 'success' | 'failure'): Promise<void> {
      assert.equal((await call(gw, '/v1/feedback', { key, body: { session_id: session, outcome } })).status, 200);
    },

    async canary(): Promise<void> {
      assert.equal((await call(gw, `/api/v1/tenant/acme/skills/${FOLD}/lifecycle`, { key, body: { key_id: `dk-${s}`, mode: CANARY } })).status, 200);
    },
    async card(): Promise<Json> {
      return (await call(gw, `/api/v1/tenant/acme/skills/${FOLD}/scorecard?key_id=dk-${s}`, { key })).json;
    },
    async mode(): Promise<string | undefined> {
      const keys = (await call(gw, '/api/v1/settings', { key })).json['dev_keys'] as Array<{ dev_key_id: string; skill_modes: Record<string, string> }>;
      return keys.find((k) => k.dev_key_id === `dk-${s}`)?.skill_modes[FOLD];
    },
  };
}
type Client = ReturnType<typeof client>;

const sizes = (card: Json) => card['sample_size'] as Record<string, number>;

/**
 * An agent asking `agent-answer` for SECRET over `rounds` file reads (SECRET
 * in read `secretIn`): `calls` calls, the last one judged by its answer and
 * reported with POST /v1/feedback as the task's outcome.
 */
async function secretTask(c: Client, session: string, o: { calls: number; rounds: number; secretIn: number; lines?: number }): Promise<void> {
  const secret = 's3cr3t';
  const asked = (last?: string) => conversation(o.rounds, { secretIn: o.secretIn, secret, ...(o.lines !== undefined && { lines: o.lines }), ...(last !== undefined && { last }) });
  for (let i = 1; i < o.calls; i++) await c.chat(session, 'agent-answer', asked(`step ${i}`));
  const reply = await c.chat(session, 'agent-answer', asked());
  await c.feedback(session, reply.content === `ANSWER: ${secret}` ? 'success' : 'failure');
}

/** an agent on `agent-loop`: it reads again while the model asks it to, for at most three calls */
async function agentAtWork(c: Client, session: string): Promise<void> {
  const messages = conversation(8);
  for (let turn = 0; turn < 3; turn++) {
    const reply = await c.chat(session, 'agent-loop', messages);
    if (reply.toolCalls === undefined) return;
    messages.push({ role: 'assistant', content: null, tool_calls: reply.toolCalls }, { role: 'tool', tool_call_id: 'call_again', content: `read again (${turn})` });
  }
}

/**
 * The tripwire crossed on the scorecard (armed: triggered, auto_rollback),
 * then one sweep period: the key is rolled back with one transition naming
 * the breaker and the anomalies, and a second period changes nothing.
 */
async function assertRolledBack(gw: TestGateway, c: Client, samples: { treatment: number; control: number }, breaker: string, figure: RegExp): Promise<void> {
  await eventually(async () => sizes(await c.card())['total'] === samples.treatment + samples.control, 'every request in the scorecard');
  const card = await c.card();
  assert.deepEqual([sizes(card)['treatment'], sizes(card)['control']], [samples.treatment, samples.control]);
  assert.deepEqual(card['breakers'], [breaker], JSON.stringify(card['anomalies']));
  assert.equal(card['status'], 'CIRCUIT_BREAKER_TRIGGERED');
  assert.equal(card['breaker_action'], 'auto_rollback');
  const anomalies = card['anomalies'] as string[];
  assert.equal(anomalies.length, 1);
  assert.match(anomalies[0] ?? '', figure);

  const report = await gw.gateway.sweep.runOnce();
  assert.deepEqual([report?.rolled_back, report?.failed], [1, 0]);
  assert.equal(await c.mode(), 'rolled_back');
  const history = (await c.card())['deployment_history'] as Json[];
  assert.equal(history.length, 2);
  assert.deepEqual(
    [history[0]?.['from_mode'], history[0]?.['to_mode'], history[0]?.['trigger_source'], history[0]?.['reason']],
    [CANARY, 'rolled_back', `auto:${breaker}`, anomalies.join('; ')],
  );

  // nothing promotes out of rolled_back, and nothing is written again
  const again = await gw.gateway.sweep.runOnce();
  assert.equal(again?.rolled_back, 0);
  assert.equal(await c.mode(), 'rolled_back');
  assert.equal(((await c.card())['deployment_history'] as Json[]).length, 2);
}

describe('each tripwire from traffic: the treatment the fold degrades is rolled back by one sweep period', () => {
  let model: FakeVendor;
  let gw: TestGateway;
  before(async () => {
    model = await startAgentModel();
    // no stage misses its ceiling on a loaded machine: only the fail-open case fails open
    gw = await startGateway(model, { GW_SKILL_CEILING_ACTING_MS: '60000', GW_SKILL_CEILING_SHADOW_MS: '60000' });
  });
  after(async () => {
    await gw.close();
    await model.close();
  });

  it('tool_call_fidelity: folded, the model calls its tool with arguments against the declared schema', async () => {
    const c = client(gw, 'fidelity');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) {
      for (const s of sessionsIn(arm, 20, 'fid')) assert.ok((await c.chat(s, 'agent-tools', conversation(8), true)).toolCalls);
    }
    await assertRolledBack(gw, c, { treatment: 20, control: 20 }, 'tool_call_fidelity', /^tool_call_fidelity 0\.0% < 97\.0% in treatment$/);
    const fidelity = ((await c.card())['downstream_ai_metrics'] as Json)['tool_call_fidelity'];
    assert.deepEqual(fidelity, { treatment: 0, control: 1 });
    // the next request served uses rolled_back: a session the canary put in treatment is not folded, and its tool call fits
    const [after] = sessionsIn('treatment', 1, 'fid-after');
    const reply = await c.chat(after as string, 'agent-tools', conversation(8), true);
    assert.ok(!model.received.at(-1)?.body.toString('utf8').includes('Earlier work folded'));
    assert.deepEqual(JSON.parse(String((reply.toolCalls?.[0]?.['function'] as Json | undefined)?.['arguments'])), { path: 'x', start: 1 });
  });

  it('turns_per_task: folded, the agent loses its place and reads again, taking three turns where control takes one', async () => {
    const c = client(gw, 'turns');
    await c.canary();
    for (const s of [...sessionsIn('treatment', 10, 'turns'), ...sessionsIn('control', 20, 'turns')]) await agentAtWork(c, s);
    await assertRolledBack(gw, c, { treatment: 30, control: 20 }, 'turns_per_task', /^turns_per_task \+200\.0% > \+25\.0% \(treatment 3, control 1\)$/);
  });

  /**
   * Tasks asking for SECRET (secretTask): `short` ones (4 calls over one file
   * read, never folded) and a `deep` one (one call over 8 reads, SECRET in the
   * first: folded in treatment, where the clipped result loses it).
   */
  it('task_success: folded, deep tasks lose the answer; the arms take the same turns and goodput stays within 5 points', async () => {
    const c = client(gw, 'success');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) {
      const [deep, ...short] = sessionsIn(arm, 10, `success-${arm}`);
      for (const s of short) await secretTask(c, s, { calls: 4, rounds: 1, secretIn: 0 });
      await secretTask(c, deep as string, { calls: 1, rounds: 8, secretIn: 0 });
    }
    await assertRolledBack(gw, c, { treatment: 37, control: 37 }, 'task_success', /^task_success 90\.0% vs control 100\.0%: -10\.0 points < -5\.0$/);
    const d = (await c.card())['downstream_ai_metrics'] as Json;
    assert.deepEqual(d['goodput'], { treatment: 0.973, control: 1 });
    assert.deepEqual(d['turns_per_task'], { treatment: 3.7, control: 3.7 });
  });

  /**
   * Same success rate, same turns, less goodput: `deep` tasks (5 calls over 8
   * reads, SECRET in the first) fail in treatment, where the fold clips it;
   * `long` tasks (1 call over 16 reads, SECRET in the last) fail in control,
   * where the model gets lost in more than 10 results, and succeed folded.
   */
  it('goodput: folded, the long-running tasks fail and the one-call tasks succeed, at the same success rate and turns', async () => {
    const c = client(gw, 'goodput');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) {
      const sessions = sessionsIn(arm, 10, `goodput-${arm}`);
      for (const s of sessions.slice(0, 5)) await secretTask(c, s, { calls: 5, rounds: 8, secretIn: 0 });
      for (const s of sessions.slice(5)) await secretTask(c, s, { calls: 1, rounds: 16, secretIn: 15, lines: 30 });
    }
    await assertRolledBack(gw, c, { treatment: 30, control: 30 }, 'goodput', /^goodput 16\.7% vs control 83\.3%: -66\.7 points < -5\.0$/);
    const d = (await c.card())['downstream_ai_metrics'] as Json;
    assert.deepEqual(d['task_success_rate'], { treatment: 0.5, control: 0.5 });
    assert.deepEqual(d['turns_per_task'], { treatment: 3, control: 3 });
  });

  it('fold_ledger: every fold of a history whose recent turns are long loses more cached prefix than it saves', async () => {
    const c = client(gw, 'ledger');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) for (const s of sessionsIn(arm, 10, 'ledger')) await c.chat(s, 'gpt-4o', conversation(8));
    await assertRolledBack(gw, c, { treatment: 10, control: 10 }, 'fold_ledger', /^fold_ledger -\$0\.\d{4} over 10 folds < \$0$/);
    const ledger = ((await c.card())['skill_specific_metrics'] as Json)['fold_ledger'] as Json;
    assert.equal(ledger['folds'], 10);
    assert.ok((ledger['net_usd'] as number) < 0);
  });
});

describe('the fail_open_rate tripwire from traffic', () => {
  let model: FakeVendor;
  let gw: TestGateway;
  before(async () => {
    model = await startAgentModel();
    // every acting stage misses its ceiling (the fold's, and the guardrails' on every request): each request is relayed as it came
    gw = await startGateway(model, { GW_SKILL_CEILING_ACTING_MS: '0' });
  });
  after(async () => {
    await gw.close();
    await model.close();
  });

  it('fail_open_rate: stages that miss their ceiling relay the caller\'s request; the sweep rolls the key back', async () => {
    const c = client(gw, 'fail_open');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) for (const s of sessionsIn(arm, 10, 'open')) await c.chat(s, 'agent-loop', conversation(8));
    await assertRolledBack(gw, c, { treatment: 10, control: 10 }, 'fail_open_rate', /^fail_open_rate 100\.0% > 1\.0%$/);
    // relayed, no request was folded: the model saw each whole history
    assert.ok(model.received.every((r) => !r.body.toString('utf8').includes('Earlier work folded')));
  });
});

describe('warnings and a confounded comparison from traffic: reported, and the sweep leaves the key alone', () => {
  let model: FakeVendor;
  let gw: TestGateway;
  before(async () => {
    model = await startAgentModel();
    gw = await startGateway(model, { GW_SKILL_CEILING_ACTING_MS: '60000', GW_SKILL_CEILING_SHADOW_MS: '60000' });
  });
  after(async () => {
    await gw.close();
    await model.close();
  });

  /** reported as `status`, nothing crossed: one sweep period writes nothing and the key keeps its canary */
  async function assertLeftAlone(c: Client, samples: { treatment: number; control: number }, status: string): Promise<Json> {
    await eventually(async () => sizes(await c.card())['total'] === samples.treatment + samples.control, 'every request in the scorecard');
    const card = await c.card();
    assert.deepEqual([sizes(card)['treatment'], sizes(card)['control']], [samples.treatment, samples.control]);
    assert.deepEqual(card['breakers'], [], JSON.stringify(card['anomalies']));
    assert.equal(card['status'], status, JSON.stringify(card['warnings']));
    assert.equal((await gw.gateway.sweep.runOnce())?.rolled_back, 0);
    assert.equal(await c.mode(), CANARY);
    assert.equal(((await c.card())['deployment_history'] as Json[]).length, 1);
    return card;
  }

  it('upstream errors: folded, the model fails with a 500; treatment errors exceed control by more than 5 points', async () => {
    const c = client(gw, 'errors');
    await c.canary();
    for (const s of sessionsIn('treatment', 20, 'err')) await c.chat(s, 'agent-error', conversation(8), false, 500);
    for (const s of sessionsIn('control', 20, 'err')) await c.chat(s, 'agent-error', conversation(8));
    const card = await assertLeftAlone(c, { treatment: 20, control: 20 }, 'REGRESSION_WARNING');
    assert.deepEqual(card['warnings'], ['upstream_error_rate 100.0% vs control 0.0%: +100.0 points > +5.0']);
  });

  it('client retries: given a wrong answer, the agent sends the same call again; treatment retries more than twice as often', async () => {
    const c = client(gw, 'retries');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) {
      for (const s of sessionsIn(arm, 10, 'retry')) {
        const messages = conversation(8, { secretIn: 0, secret: 'r3try' });
        const first = await c.chat(s, 'agent-answer', messages);
        // a wrong answer is asked again as it was; a right one is followed by the next question
        await c.chat(s, 'agent-answer', first.content === 'ANSWER: r3try' ? conversation(8, { secretIn: 0, secret: 'r3try', last: 'And where is it set?' }) : messages);
      }
    }
    const card = await assertLeftAlone(c, { treatment: 20, control: 20 }, 'REGRESSION_WARNING');
    assert.deepEqual(card['warnings'], ['client_retry_rate 50.0% > 2x control 0.0%']);
    assert.deepEqual((card['generic_metrics'] as Json)['client_retry_rate'], { treatment: 0.5, control: 0 });
  });

  it('turns up 15 to 25 percent: folded, the agent needs one more turn after its five', async () => {
    const c = client(gw, 'slower');
    await c.canary();
    for (const arm of ['treatment', 'control'] as const) {
      for (const s of sessionsIn(arm, 10, 'slower')) {
        let last: Reply | undefined;
        for (let turn = 0; turn < 5; turn++) last = await c.chat(s, 'agent-loop', conversation(8, { last: `step ${turn}` }));
        // a reply that still asks to read means the agent is not done
        if (last?.toolCalls) await c.chat(s, 'agent-loop', conversation(8, { last: 'step 5' }));
      }
    }
    const card = await assertLeftAlone(c, { treatment: 60, control: 50 }, 'REGRESSION_WARNING');
    assert.deepEqual(card['warnings'], ['turns_per_task +20.0% (warning band +15% to +25%)']);
  });

  it('confounded: session coverage 100% against 50% keeps the turns shown and stops the task-level tripwires', async () => {
    const c = client(gw, 'confounded');
    await c.canary();
    for (const s of [...sessionsIn('treatment', 10, 'conf'), ...sessionsIn('control', 20, 'conf')]) await agentAtWork(c, s);
    // control also serves as many calls without a session: its session share is half treatment's
    for (const r of requestsIn('control', 20, 'conf')) await c.chat(r, 'agent-loop', conversation(1));
    const card = await assertLeftAlone(c, { treatment: 30, control: 40 }, 'HEALTHY');
    assert.equal(card['confounded'], true);
    assert.equal(card['confounded_reason'], 'session_share_treatment=1 control=0.5');
    const d = card['downstream_ai_metrics'] as Json;
    assert.deepEqual(d['turns_per_task'], { treatment: 3, control: 1 });
    assert.deepEqual((d['single_call_metrics'] as Json)['requests'], { treatment: 0, control: 20 });
  });
});
