import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { ibanValid, luhn } from '../../src/skills/pii/checksums.js';
import { findPii } from '../../src/skills/pii/find.js';
import { evaluatePiiRedaction } from '../../src/skills/pii/index.js';
import { RECOGNIZERS, type PiiKind } from '../../src/skills/pii/recognizers.js';
import { restoreBody, streamRestorer, TextRestorer } from '../../src/skills/pii/restore.js';
import { VIEW_MAX_BYTES } from '../../src/skills/views/index.js';
import { NO_DEADLINE, PASSED, stageInput } from '../helpers/stage-input.js';

/** Sentences with the values that must be found ([kind, value]); hard negatives have none. */
const CORPUS: Array<[string, Array<[PiiKind, string]>]> = [
  ['Write to jane.doe+billing@example.co.uk about it.', [['email', 'jane.doe+billing@example.co.uk']]],
  ['Contact: ops@northwind.io.', [['email', 'ops@northwind.io']]],
  ['Call me at (415) 555-0132 tomorrow.', [['phone', '(415) 555-0132']]],
  ['Her mobile is +44 20 7946 0958.', [['phone', '+44 20 7946 0958']]],
  ['phone 4155550132', [['phone', '4155550132']]],
  ['office: 212-555-0199', [['phone', '212-555-0199']]],
  ['Card: 4111 1111 1111 1111, exp 12/27', [['card', '4111 1111 1111 1111']]],
  ['paid with visa 4012888888881881', [['card', '4012888888881881']]],
  ['amex 3782-822463-10005 on file', [['card', '3782-822463-10005']]],
  ['credit card 5555-5555-5555-4444', [['card', '5555-5555-5555-4444']]],
  ['IBAN DE89 3704 0044 0532 0130 00, please', [['iban', 'DE89 3704 0044 0532 0130 00']]],
  ['send to GB82WEST12345698765432', [['iban', 'GB82WEST12345698765432']]],
  ['My SSN is 123-45-6789.', [['ssn', '123-45-6789']]],
  ['social security number 078 05 1120', [['ssn', '078 05 1120']]],
  ['the box at 10.20.30.40 is down', [['ip_address', '10.20.30.40']]],
  ['ping fe80::1ff:fe23:4567:890a now', [['ip_address', 'fe80::1ff:fe23:4567:890a']]],
  ['key=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z', [['api_key', 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z']]],
  ['ANTHROPIC_API_KEY=sk-ant-api03-' + 'x'.repeat(40), [['api_key', 'sk-ant-api03-' + 'x'.repeat(40)]]],
  ['aws_access_key_id = AKIAIOSFODNN7EXAMPLE', [['aws_access_key', 'AKIAIOSFODNN7EXAMPLE']]],
  ['token ghp_16C7e42F292c6912E7710c838347Ae178B4a', [['github_token', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a']]],
  [
    'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
    [['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U']],
  ],
  ['-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----', [['private_key', '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----']]],
  ['Email a@b.co or call 650-253-0000.', [['email', 'a@b.co'], ['phone', '650-253-0000']]],
  // hard negatives
  ['Your order 4111111111111111 has shipped.', []],
  ['order id 1234567812345670 (passes Luhn)', []],
  ['reference 79927398713 attached', []],
  ['Upgrade to version 1.2.3.4 today.', []],
  ['release 10.0.0.1 notes', []],
  ['Meeting on 2024-05-02 at 12:30:45.', []],
  ['uuid 123e4567-e89b-12d3-a456-426614174000', []],
  ['commit 9fceb02d0ae598e95dc970b74767f19372d61af8', []],
  ['the retina icon@2x.png is blurry', []],
  ['IBAN DE89 3704 0044 0532 0130 01 (bad checksum)', []],
  ['card 4111 1111 1111 1112 (fails Luhn)', []],
  ['timestamp 1714651200123 in ms', []],
  ['std::vector<int> and a::b are C++', []],
  ['MAC 00:1A:2B:3C:4D:5E', []],
  ['ISBN 978-3-16-148410-0', []],
  ['The public key is fine; publication 123-45-6789 is an SSN shape', [['ssn', '123-45-6789']]],
];

describe('pii recognizers', () => {
  test('checksums', () => {
    assert.ok(luhn('4111111111111111'));
    assert.ok(!luhn('4111111111111112'));
    assert.ok(ibanValid('DE89370400440532013000'));
    assert.ok(ibanValid('GB82WEST12345698765432'));
    assert.ok(!ibanValid('DE89370400440532013001'));
    assert.ok(!ibanValid('DE8937040044053201300'));
  });

  test('precision and recall over the corpus of positives and hard negatives', (t) => {
    let tp = 0;
    let fp = 0;
    let fn = 0;
    const misses: string[] = [];
    for (const [text, want] of CORPUS) {
      const got = findPii(text).map((f) => `${f.kind}:${text.slice(f.start, f.end)}`);
      const expected = want.map(([k, v]) => `${k}:${v}`);
      for (const g of got) if (expected.includes(g)) tp++;
      else {
        fp++;
        misses.push(`false positive ${g} in ${JSON.stringify(text)}`);
      }
      for (const e of expected) if (!got.includes(e)) {
        fn++;
        misses.push(`missed ${e}`);
      }
    }
    const precision = tp / (tp + fp);
    const recall = tp / (tp + fn);
    t.diagnostic(`pii corpus: ${CORPUS.length} sentences, precision ${(precision * 100).toFixed(1)}%, recall ${(recall * 100).toFixed(1)}% (tp ${tp}, fp ${fp}, fn ${fn})`);
    assert.deepEqual(misses, []);
  });

  test('overlapping candidates: the higher score wins, wherever in a long text they fall', () => {
    // an IBAN holds a card-shaped run of digits; an API key is the local part of an email-shaped string
    const unit = 'IBAN DE89 3704 0044 0532 0130 00 tel +49 89 1234 5678; key sk-proj-abcdefghijklmnopqrstuvwx@example.com. ';
    const found = findPii(unit.repeat(40));
    assert.deepEqual(
      found.map((f) => f.kind),
      Array.from({ length: 40 }, () => ['iban', 'phone', 'api_key']).flat(),
    );
    assert.ok(found.every((f, i) => i === 0 || (found[i - 1] as { end: number }).end <= f.start), 'disjoint, in text order');
  });

  test('an anchored recognizer finds exactly what its pattern alone finds', () => {
    // the IPv6 row tries starts only near a colon pair, the e-mail row only where the run before an `@` begins:
    // the same values as a scan of every start, however the colons, `@`s and local-part characters fall
    const anchored = RECOGNIZERS.filter((r) => r.anchor !== undefined);
    assert.deepEqual(anchored.map((r) => r.kind).sort(), ['email', 'ip_address']);
    const plain = anchored.map(({ anchor: _, ...r }) => r);
    const pieces = ['::', ':', 'fe80::1', '2001:db8::ff00:42:8329', 'a:b:c', '10:30:00', 'dead:beef:cafe::', ':::', 'abcd:', ':1234:', '::ffff:192.0.2.1', '1:2:3:4:5:6:7:8:9', 'x', ' ', 'ff', '0',
      '@', 'jane.doe@example.com', 'a@b.co', '.x', 'x.', '_', '+', '%', '-', 'é', 'example.com', 'icon@2x.png', '@@', 'a@b', '.co'];
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    for (let i = 0; i < 6000; i++) {
      const text = Array.from({ length: 1 + next(12) }, () => pieces[next(pieces.length)]).join(next(2) ? '' : ' ');
      assert.deepEqual(findPii(text, anchored), findPii(text, plain), JSON.stringify(text));
    }
  });

  test('the card and IPv4 patterns, which take their first digit before looking behind it, match what their lookbehind-first forms match', () => {
    const lookbehindFirst: Partial<Record<PiiKind, RegExp>> = {
      card: /(?<![\w.-])(?:\d{4}[ -]\d{4}[ -]\d{4}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{4,5}|\d{13,19})(?![\w-]|\.\d)/g,
      ip_address: /(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)/g,
    };
    const rows = RECOGNIZERS.filter((r) => r.kind === 'card' || (r.kind === 'ip_address' && r.anchor === undefined));
    assert.equal(rows.length, 2);
    const matches = (re: RegExp, text: string) => [...text.matchAll(re)].map((m) => `${m.index}:${m[0]}`);
    const pieces = ['4111', '1111', '192', '168', '0', '1', '255', '.', '-', ' ', '_', 'a', 'x.', '.5', '4242424242424242', '10.0.0.1', '1.2.3', '\n', '07'];
    let seed = 11;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    for (let i = 0; i < 8000; i++) {
      const text = Array.from({ length: 1 + next(10) }, () => pieces[next(pieces.length)]).join('');
      for (const r of rows) assert.deepEqual(matches(r.pattern, text), matches(lookbehindFirst[r.kind]!, text), `${r.kind} ${JSON.stringify(text)}`);
    }
  });

  test('context words match whole words only', () => {
    // "cc" inside "accent", "card" inside "discarded": no context, so a bare Luhn number stays
    assert.deepEqual(findPii('accent discarded 4012888888881881'), []);
    assert.equal(findPii('cc 4012888888881881').length, 1);
    // İ lowercases to two code units: the words around each value are still read at the value's own place
    assert.equal(findPii('İİİİ cc 4012888888881881').length, 1);
    assert.deepEqual(findPii('cc İİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİ 4012888888881881'), []);
  });

  test('context windows: 48 characters before, 24 after, a word cut at the edge; a word against only among the last three', () => {
    // a bare 16-digit card number with an issuer needs a context word, and a word against it drops it again
    const card = '4111111111111111';
    const found = (text: string) => findPii(text).map((f) => f.kind);
    assert.deepEqual(found(`${card} card`), ['card'], 'after the value');
    assert.deepEqual(found(`${card}${' '.repeat(20)}card`), ['card'], 'ending at the after window edge');
    assert.deepEqual(found(`${card}${' '.repeat(21)}card`), [], 'cut by the after window edge');
    assert.deepEqual(found(`card${' '.repeat(44)}${card}`), ['card'], 'starting at the before window edge');
    assert.deepEqual(found(`card${' '.repeat(45)}${card}`), [], 'cut by the before window edge');
    assert.deepEqual(found(`card order a b ${card}`), [], 'against among the last three words');
    assert.deepEqual(found(`card order a b c ${card}`), ['card'], 'against before the last three words');
    assert.deepEqual(found(`card ${card} order`), ['card'], 'against after the value does not count');
  });
});

const CHAT = (text: string, earlier = 'Earlier note.') => ({
  model: 'gpt-4o',
  messages: [
    { role: 'system', content: 'Support agent. Escalations go to lead@northwind.io.' },
    { role: 'user', content: earlier },
    { role: 'assistant', content: 'Noted.' },
    { role: 'user', content: text },
  ],
});

describe('evaluatePiiRedaction', () => {
  test('replaces values with placeholders, the same value with the same one, and returns the restore map', async () => {
    const body = CHAT('Mail bob@example.com, card 4111 1111 1111 1111, or bob@example.com again.', 'My address is bob@example.com');
    const r = await evaluatePiiRedaction(stageInput('pii_redaction', 'chat_completions', body), NO_DEADLINE);
    assert.equal(r.outcome, 'applied');
    const sent = Buffer.from(r.change!.body!).toString('utf8');
    assert.ok(!sent.includes('bob@example.com') && !sent.includes('4111') && !sent.includes('lead@northwind.io'));
    const out = JSON.parse(sent) as ReturnType<typeof CHAT>;
    assert.equal(out.messages[0]!.content, 'Support agent. Escalations go to [EMAIL_1].');
    assert.equal(out.messages[1]!.content, 'My address is [EMAIL_2]');
    assert.equal(out.messages[3]!.content, 'Mail [EMAIL_2], card [CARD_1], or [EMAIL_2] again.');
    assert.deepEqual(r.restore, { '[EMAIL_1]': 'lead@northwind.io', '[EMAIL_2]': 'bob@example.com', '[CARD_1]': '4111 1111 1111 1111' });
    // the preview is the newest user text, as redacted
    assert.deepEqual(r.detail, { kinds: { email: 4, card: 1 }, redactions: 5, preview: 'Mail [EMAIL_2], card [CARD_1], or [EMAIL_2] again.' });
    assert.ok(!JSON.stringify(r.detail).includes('@'));
  });

  test('a placeholder the caller wrote is never handed out', async () => {
    const r = await evaluatePiiRedaction(stageInput('pii_redaction', 'chat_completions', CHAT('Replace [EMAIL_1] with ann@example.org')), NO_DEADLINE);
    const out = JSON.parse(Buffer.from(r.change!.body!).toString('utf8')) as ReturnType<typeof CHAT>;
    // [EMAIL_1] is the caller's own text, the system prompt's address takes [EMAIL_2]
    assert.equal(out.messages[3]!.content, 'Replace [EMAIL_1] with [EMAIL_3]');
  });

  test('every vendor shape: tool results and structured tool inputs are redacted too', async () => {
    const cases: Array<[string, unknown]> = [
      ['messages', { model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'hi ann@example.org' }, { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: { to: 'ann@example.org' } }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'sent to ann@example.org' }] }] }],
      ['converse', { messages: [{ role: 'user', content: [{ text: 'hi ann@example.org' }] }, { role: 'assistant', content: [{ toolUse: { toolUseId: 't', name: 'f', input: { to: 'ann@example.org' } } }] }, { role: 'user', content: [{ toolResult: { toolUseId: 't', content: [{ text: 'sent to ann@example.org' }] } }] }] }],
      ['generate_content', { contents: [{ role: 'user', parts: [{ text: 'hi ann@example.org' }] }, { role: 'model', parts: [{ functionCall: { name: 'f', args: { to: 'ann@example.org' } } }] }, { role: 'user', parts: [{ functionResponse: { name: 'f', response: { out: 'sent to ann@example.org' } } }] }] }],
      ['responses', { model: 'm', input: [{ role: 'user', content: 'hi ann@example.org' }, { type: 'function_call', call_id: 'c', name: 'f', arguments: '{"to":"ann@example.org"}' }, { type: 'function_call_output', call_id: 'c', output: 'sent to ann@example.org' }] }],
      ['execute', { input: { messages: [{ role: 'user', content: 'hi ann@example.org' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"to":"ann@example.org"}' } }] }, { role: 'tool', tool_call_id: 'c', content: 'sent to ann@example.org' }] } }],
    ];
    for (const [surface, body] of cases) {
      const r = await evaluatePiiRedaction(stageInput('pii_redaction', surface, body), NO_DEADLINE);
      const sent = Buffer.from(r.change!.body!).toString('utf8');
      assert.ok(!sent.includes('ann@example.org'), `${surface}: ${sent}`);
      assert.equal(sent.split('[EMAIL_1]').length - 1, 3, surface);
      // a tool result is no user text: the preview is the user's own turn
      assert.deepEqual(r.detail, { kinds: { email: 3 }, redactions: 3, preview: 'hi [EMAIL_1]' }, surface);
    }
  });

  test('nothing to redact is skipped; no view is skipped; a passed deadline gives up', async () => {
    assert.equal((await evaluatePiiRedaction(stageInput('pii_redaction', 'chat_completions', { messages: [{ role: 'user', content: 'Hello there, version 1.2.3.4' }] }), NO_DEADLINE)).outcome, 'skipped');
    assert.equal((await evaluatePiiRedaction(stageInput('pii_redaction', 'count_tokens', CHAT('a@b.co')), NO_DEADLINE)).outcome, 'skipped');
    assert.equal((await evaluatePiiRedaction(stageInput('pii_redaction', 'chat_completions', 'not json'), NO_DEADLINE)).outcome, 'skipped');
    assert.equal((await evaluatePiiRedaction(stageInput('pii_redaction', 'chat_completions', CHAT('a@b.co')), PASSED)).outcome, 'ceiling_exceeded');
  });

  test('a body past the size a stage parses whole fails open, relayed as sent, with the reason', async () => {
    const turns = Array.from({ length: Math.ceil(VIEW_MAX_BYTES / 40) }, () => ({ role: 'user', content: 'Contact: ops@northwind.io.' }));
    const r = await evaluatePiiRedaction(stageInput('pii_redaction', 'chat_completions', { messages: turns }), NO_DEADLINE);
    assert.equal(r.outcome, 'ceiling_exceeded');
    assert.equal(r.change, undefined);
    assert.match(String(r.detail?.['reason']), /past the \d+ a stage parses whole/);
  });
});

const MAP = { '[EMAIL_1]': 'bob@example.com', '[KEY_1]': '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----' };

describe('reply restorer', () => {
  test('a whole JSON reply gets the values back, JSON-escaped', () => {
    const reply = Buffer.from(JSON.stringify({ choices: [{ message: { content: 'Sent to [EMAIL_1]; key [KEY_1]; unknown [EMAIL_9]' } }] }));
    const out = JSON.parse(restoreBody(reply, MAP).toString('utf8')) as { choices: Array<{ message: { content: string } }> };
    assert.equal(out.choices[0]!.message.content, `Sent to bob@example.com; key ${MAP['[KEY_1]']}; unknown [EMAIL_9]`);
  });

  test('a placeholder split across deltas is restored whole, holding back no more than a placeholder', () => {
    const r = new TextRestorer(MAP, 9);
    assert.equal(r.push('Mail [EM'), 'Mail ');
    assert.equal(r.push('AIL'), '');
    assert.equal(r.push('_1] now [x'), 'bob@example.com now [x');
    assert.equal(r.push(' and [EMAIL_'), ' and ');
    assert.equal(r.flush(), '[EMAIL_');
    // a long bracketed run is not held: it cannot be a placeholder
    assert.equal(new TextRestorer(MAP, 9).push('see [ABCDEFGHIJ'), 'see [ABCDEFGHIJ');
  });

  const sse = (events: Array<[string | undefined, unknown]>) => events.map(([n, d]) => `${n ? `event: ${n}\n` : ''}data: ${typeof d === 'string' ? d : JSON.stringify(d)}\n\n`).join('');
  /** the stream cut into 7-byte chunks, restored, then the text of the deltas joined */
  function run(surface: string, stream: string, text: (name: string | undefined, data: Record<string, unknown>) => string): string {
    const r = streamRestorer(surface, MAP)!;
    let out = '';
    for (let i = 0; i < stream.length; i += 7) out += r.push(Buffer.from(stream.slice(i, i + 7))).toString();
    out += r.end().toString();
    return out
      .split('\n\n')
      .filter((b) => b.includes('data: {'))
      .map((b) => {
        const name = /^event: (.*)$/m.exec(b)?.[1];
        return text(name, JSON.parse(b.slice(b.indexOf('data: ') + 6)) as Record<string, unknown>);
      })
      .join('');
  }

  test('chat-completions stream: content and tool-call arguments', () => {
    const chunk = (delta: unknown, finish: string | null = null) => [undefined, { choices: [{ index: 0, delta, finish_reason: finish }] }] as [undefined, unknown];
    const stream = sse([chunk({ content: 'To [EM' }), chunk({ content: 'AIL_' }), chunk({ content: '1] ok' }), chunk({ content: ' [EMAIL' }), chunk({}, 'stop'), [undefined, '[DONE]']]);
    const text = run('chat_completions', stream, (_n, d) => ((d['choices'] as Array<{ delta: { content?: string } }>)[0]!.delta.content ?? ''));
    assert.equal(text, 'To bob@example.com ok [EMAIL');
    const args = sse([chunk({ tool_calls: [{ index: 0, function: { arguments: '{"k":"[KE' } }] }), chunk({ tool_calls: [{ index: 0, function: { arguments: 'Y_1]"}' } }] }), chunk({}, 'tool_calls')]);
    const joined = run('chat_completions', args, (_n, d) => (d['choices'] as Array<{ delta: { tool_calls?: Array<{ function: { arguments: string } }> } }>)[0]!.delta.tool_calls?.[0]!.function.arguments ?? '');
    assert.deepEqual(JSON.parse(joined), { k: MAP['[KEY_1]'] });
  });

  test('messages, responses, generate-content and execute streams', () => {
    const anthropic = sse([
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi [EMA' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'IL_1]' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]);
    assert.equal(run('messages', anthropic, (_n, d) => ((d['delta'] as { text?: string } | undefined)?.text ?? '')), 'hi bob@example.com');
    const responses = sse([
      ['response.output_text.delta', { type: 'response.output_text.delta', output_index: 0, content_index: 0, delta: '[EMAIL_1' }],
      ['response.output_text.delta', { type: 'response.output_text.delta', output_index: 0, content_index: 0, delta: '] done' }],
      ['response.output_text.done', { type: 'response.output_text.done', output_index: 0, content_index: 0, text: '[EMAIL_1] done' }],
    ]);
    assert.equal(run('responses', responses, (n, d) => (n === 'response.output_text.done' ? `|${String(d['text'])}` : String(d['delta']))), 'bob@example.com done|bob@example.com done');
    const gemini = sse([
      [undefined, { candidates: [{ index: 0, content: { role: 'model', parts: [{ text: 'a [EMAIL' }] } }] }],
      [undefined, { candidates: [{ index: 0, content: { role: 'model', parts: [{ text: '_1] [EMAIL' }] }, finishReason: 'STOP' }] }],
    ]);
    assert.equal(run('generate_content', gemini, (_n, d) => (d['candidates'] as Array<{ content: { parts: Array<{ text: string }> } }>)[0]!.content.parts[0]!.text), 'a bob@example.com [EMAIL');
    const execute = sse([
      ['output.delta', { content: 'x [EMAIL_' }],
      ['output.delta', { content: '1]' }],
      ['execution.completed', { output: { content: 'x [EMAIL_1]' } }],
    ]);
    assert.equal(run('execute', execute, (n, d) => (n === 'output.delta' ? String(d['content']) : `|${(d['output'] as { content: string }).content}`)), 'x bob@example.com|x bob@example.com');
  });

  test('converse stream: binary frames re-encoded with the values', () => {
    const codec = new EventStreamCodec(toUtf8, fromUtf8);
    const frame = (type: string, payload: unknown) =>
      codec.encode({
        headers: { ':message-type': { type: 'string', value: 'event' }, ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' } },
        body: fromUtf8(JSON.stringify(payload)),
      });
    const bytes = Buffer.concat([
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'to [EMAI' }, p: 'abc' }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'L_1]!' }, p: 'abcd' }),
      frame('contentBlockStop', { contentBlockIndex: 0 }),
    ]);
    const r = streamRestorer('converse', MAP)!;
    const out: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 11) out.push(Buffer.from(r.push(bytes.subarray(i, i + 11))));
    out.push(Buffer.from(r.end()));
    const all = Buffer.concat(out);
    let text = '';
    for (let at = 0; at < all.length; ) {
      const len = all.readUInt32BE(at);
      const m = codec.decode(all.subarray(at, at + len));
      const data = JSON.parse(toUtf8(m.body)) as { delta?: { text: string } };
      text += data.delta?.text ?? '';
      at += len;
    }
    assert.equal(text, 'to bob@example.com!');
  });
});
