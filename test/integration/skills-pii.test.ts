import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startEchoVendor, type EchoVendor } from '../fakes/echo.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { callHeld, callSurface, durableRow, echoEnv, metricValue, SKILL_SURFACES } from '../helpers/skill-surfaces.js';
import { eventually } from '../helpers/wait.js';

/**
 * pii_redaction through the real gateway, its pool threads and Redis, with an
 * upstream that says back what it received: in prod the vendor sees
 * placeholders only and the caller gets its own values back, whole and
 * streamed (a placeholder split across stream events restored whole), on
 * every surface that parses a body; in shadow the vendor gets the caller's
 * bytes and the row counts what would have been redacted.
 */

const VALUES = ['jane.doe@example.com', '+1 415 555 0132', '4111 1111 1111 1111', 'GB82 WEST 1234 5698 7654 32'];
/** a pii_redaction stage has finished in its pool thread */
const PII_RAN = 'gw_skill_run_seconds_count{stage="pii_redaction"}';
const PROMPT = `Please write to ${VALUES[0]} or call ${VALUES[1]}; my card is ${VALUES[2]} and my IBAN ${VALUES[3]}.`;

describe('pii_redaction on every surface that parses a body', () => {
  let echo: EchoVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('pii-org');

  before(async () => {
    echo = await startEchoVendor();
    gw = await startTestGateway({ bootstrap, redis: true, env: echoEnv(echo) });
  });
  after(async () => {
    await gw.close();
    await echo.close();
  });

  for (const s of SKILL_SURFACES) {
    for (const stream of [false, true]) {
      const mode = stream ? 'streamed' : 'whole';
      it(`${s.name}, ${mode}: prod sends placeholders upstream and restores the caller's values in the reply`, async () => {
        const r = await callSurface(gw, echo, s, devKey, PROMPT, { stream, headers: { 'x-gw-skills': 'pii_redaction=prod' } });
        assert.equal(r.status, 200, r.bytes.toString());
        assert.equal(r.headers.get('x-gw-skill-pii-redaction'), 'applied');
        assert.equal(r.headers.get('x-gw-served-by'), 'pipeline');
        assert.equal(r.upstream.length, 1);
        const sent = r.upstream[0]!.body.toString();
        for (const v of VALUES) assert.ok(!sent.includes(v), `${v} reached the vendor: ${sent}`);
        for (const p of ['[EMAIL_1]', '[PHONE_1]', '[CARD_1]', '[IBAN_1]']) assert.ok(sent.includes(p), `${p} missing upstream: ${sent}`);
        // the echo said the placeholders back: the caller reads its own values, nothing else changed
        assert.equal(r.text, PROMPT);
      });

      it(`${s.name}, ${mode}: shadow sends the caller's bytes and changes nothing in the reply`, async () => {
        // in shadow the stage runs beside the upstream call: the vendor answers once it has finished
        const r = await callHeld(gw, echo, s, devKey, PROMPT, PII_RAN, { stream, headers: { 'x-gw-skills': 'pii_redaction=shadow' } });
        assert.equal(r.status, 200, r.bytes.toString());
        assert.equal(r.headers.get('x-gw-skill-pii-redaction'), 'shadow');
        const sent = r.upstream[0]!.body.toString();
        for (const v of VALUES) assert.ok(sent.includes(v), `${v} missing upstream: ${sent}`);
        assert.ok(!sent.includes('[EMAIL_1]'));
        assert.equal(r.text, PROMPT);
      });
    }
  }

  it("shadow counts what it would redact in the request's row, by kind, never a value", async () => {
    const s = SKILL_SURFACES[0]!;
    const r = await callHeld(gw, echo, s, devKey, PROMPT, PII_RAN, { headers: { 'x-gw-skills': 'pii_redaction=shadow', 'x-request-id': 'pii-shadow-row' } });
    assert.equal(r.status, 200);
    const row = await durableRow<{ request: { skills: Record<string, unknown> }; decision: unknown }>(gw, devKey, 'pii-shadow-row');
    assert.deepEqual(row.request.skills['pii_redaction'], { arm: 'shadow', outcome: 'shadow', detail: { decision: 'applied', kinds: { email: 1, phone: 1, card: 1, iban: 1 } } });
    const stored = JSON.stringify(row);
    for (const v of VALUES) assert.ok(!stored.includes(v), `${v} is in the row`);
  });

  it('the inspector shows a prompt preview only where pii_redaction ran: the newest user text as redacted, at most 120 characters, never in the durable record', async () => {
    const s = SKILL_SURFACES[0]!;
    const text = `${PROMPT} ${'and then some more words '.repeat(8)}`;
    const redacted = `Please write to [EMAIL_1] or call [PHONE_1]; my card is [CARD_1] and my IBAN [IBAN_1]. ${'and then some more words '.repeat(8)}`;
    const ran = { prod: 'pii-preview-prod', shadow: 'pii-preview-shadow' };
    await callSurface(gw, echo, s, devKey, text, { system: `Never forget ${VALUES[0]}`, headers: { 'x-gw-skills': 'pii_redaction=prod', 'x-request-id': ran.prod } });
    await callHeld(gw, echo, s, devKey, text, PII_RAN, { headers: { 'x-gw-skills': 'pii_redaction=shadow', 'x-request-id': ran.shadow } });
    await callSurface(gw, echo, s, devKey, text, { headers: { 'x-gw-skills': 'pii_redaction=off', 'x-request-id': 'pii-preview-off' } });
    const feed = await fetch(`${gw.url}/api/v1/requests?tenant_id=pii-org`, { headers: { authorization: `Bearer ${devKey}` } });
    const rows = ((await feed.json()) as { data: Array<{ request_id: string; prompt_preview: string }> }).data;
    const preview = (id: string) => rows.find((r) => r.request_id === id)?.prompt_preview;
    assert.equal(preview(ran.prod), redacted.slice(0, 120));
    assert.equal(preview(ran.shadow), redacted.slice(0, 120));
    assert.equal(preview('pii-preview-off'), '', 'without the redaction there is no preview');
    // nor in /v1/execute's trace: its detail is kinds and counts
    const execute = SKILL_SURFACES.find((x) => x.name === 'execute')!;
    const traced = await callSurface(gw, echo, execute, devKey, text, { headers: { 'x-gw-skills': 'pii_redaction=prod' } });
    const trace = (JSON.parse(traced.bytes.toString()) as { trace: { skills: Array<{ skill: string; detail: unknown }> } }).trace;
    assert.deepEqual(trace.skills.find((x) => x.skill === 'pii_redaction')?.detail, { kinds: { email: 1, phone: 1, card: 1, iban: 1 }, redactions: 4 });
    for (const id of Object.values(ran)) {
      const stored = JSON.stringify(await durableRow(gw, devKey, id));
      assert.ok(!stored.includes('Please write') && !/\\?"preview\\?"/.test(stored), `the prompt is in the durable record of ${id}: ${stored}`);
    }
  });

  it('counts the values it replaced by kind in gw_skill_redactions_total', async () => {
    const series = 'gw_skill_redactions_total{kind="email"}';
    const before = await metricValue(gw, series);
    await callSurface(gw, echo, SKILL_SURFACES[0]!, devKey, PROMPT, { headers: { 'x-gw-skills': 'pii_redaction=prod' } });
    await eventually(async () => (await metricValue(gw, series)) === before + 1, series);
  });

  it('/v1/execute with fallbacks: the next candidate goes upstream redacted too, and its reply is restored', async () => {
    const body = JSON.stringify({ input: { messages: [{ role: 'user', content: PROMPT }] }, target: { model: 'error_503', fallbacks: ['gpt-4o'] } });
    const n = echo.received.length;
    const res = await fetch(`${gw.url}/v1/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream', 'x-gw-skills': 'pii_redaction=prod' },
      body,
    });
    const reply = (await res.json()) as { model: string; output: { content: string } };
    assert.equal(res.status, 200, JSON.stringify(reply));
    const sent = echo.received.slice(n).map((r) => JSON.parse(r.body.toString()) as { model: string });
    assert.deepEqual(
      sent.map((b) => b.model),
      ['error_503', 'gpt-4o'],
    );
    for (const b of sent) for (const v of VALUES) assert.ok(!JSON.stringify(b).includes(v), `${v} reached the vendor`);
    assert.equal(reply.model, 'gpt-4o');
    assert.equal(reply.output.content, PROMPT);
  });

  it('a value the caller wrote as a placeholder itself is never restored into something else', async () => {
    const s = SKILL_SURFACES[0]!;
    const text = 'Keep [EMAIL_1] as written; mail jane.doe@example.com.';
    const r = await callSurface(gw, echo, s, devKey, text, { headers: { 'x-gw-skills': 'pii_redaction=prod' } });
    const sent = r.upstream[0]!.body.toString();
    assert.ok(sent.includes('[EMAIL_1]') && sent.includes('[EMAIL_2]') && !sent.includes('jane.doe'), sent);
    assert.equal(r.text, text);
  });
});
