import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { runStages, type Runnable } from '../../src/pipeline/runner.js';
import { CONTINUE, type Call, type Stage, type StageName, type Verdict } from '../../src/pipeline/types.js';

interface Ctx extends Runnable {
  ran: string[];
}

const ctx = (): Ctx => ({ at: 'authenticate', ran: [], call: { org: {}, key: {}, provider: 'openai', model: 'gpt-4o', body: Buffer.from('a'), location: undefined } as unknown as Call });
const stage = (name: StageName, verdict: Verdict | (() => Promise<Verdict>)): Stage<Ctx> => ({
  name,
  run(c) {
    c.ran.push(name);
    return typeof verdict === 'function' ? verdict() : verdict;
  },
});

describe('the stage runner', () => {
  it('continue: runs every stage in order and answers synchronously when every stage does', () => {
    const c = ctx();
    const out = runStages([stage('authenticate', CONTINUE), stage('plan', CONTINUE), stage('admission', CONTINUE)], c);
    assert.ok(!(out instanceof Promise), 'no promise when no stage made one');
    assert.equal(out, CONTINUE);
    assert.deepEqual(c.ran, ['authenticate', 'plan', 'admission']);
  });

  it('rewrite: the call takes the new body and model, and the run goes on', async () => {
    const c = ctx();
    const out = await runStages([stage('skills', { kind: 'rewrite', body: Buffer.from('b'), model: 'gpt-4o-mini' }), stage('metering', async () => CONTINUE), stage('dispatch', CONTINUE)], c);
    assert.equal(out.kind, 'continue');
    assert.equal(c.call?.body.toString(), 'b');
    assert.equal(c.call?.model, 'gpt-4o-mini');
    assert.deepEqual(c.ran, ['skills', 'metering', 'dispatch']);
  });

  it('answer: ends the run there (a cache hit calls nothing after it), also after a stage that waited', async () => {
    const c = ctx();
    const answer: Verdict = { kind: 'answer', status: 200, headers: [['x-gw-served-by', 'cache']], body: '{}' };
    const out = await runStages([stage('admission', async () => CONTINUE), stage('skills', answer), stage('dispatch', CONTINUE)], c);
    assert.equal(out, answer);
    assert.deepEqual(c.ran, ['admission', 'skills']);
    assert.equal(c.at, 'skills');
  });

  it('refuse: ends the run with the typed error, the stage named where it stopped', () => {
    const c = ctx();
    const error = new GatewayError('guardrail_violation', 'refused');
    const out = runStages([stage('admission', CONTINUE), stage('skills', { kind: 'refuse', error }), stage('dispatch', CONTINUE)], c);
    assert.deepEqual(out, { kind: 'refuse', error });
    assert.deepEqual(c.ran, ['admission', 'skills']);
  });

  it('a stage that throws stops the run with its error; the context names the stage at fault', async () => {
    const c = ctx();
    const boom: Stage<Ctx> = { name: 'metering', run: () => Promise.reject(new TypeError('fault')) };
    await assert.rejects(async () => runStages([stage('skills', CONTINUE), boom, stage('dispatch', CONTINUE)], c), TypeError);
    assert.equal(c.at, 'metering');
    assert.deepEqual(c.ran, ['skills']);
  });
});
