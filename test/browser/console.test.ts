import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { OPERATIONS } from '../../src/api/openapi.js';
import type { Route } from '../../src/http/types.js';
import { Router } from '../../src/server/router.js';
import { armFor } from '../../src/skills/arms.js';
import { SURFACES } from '../../src/surfaces/index.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { call } from '../helpers/api.js';
import { devKeySecret, startTestGateway, UNLIMITED_RPS, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

/**
 * The web console end to end: a real gateway on Redis in front of a fake
 * OpenAI, real traffic from two tenants, and headless Chromium signing in with
 * each tenant's developer key. Every page must show that gateway's real data
 * (the request ids and models sent here), and one tenant's key nothing of the
 * other's. A screenshot of each page lands in test-output/console/.
 */

const CHROMIUM = '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM) ? false : `no headless Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium; .ci/run does) to run the console's browser tests`;
const OUT = fileURLToPath(new URL('../../test-output/console/', import.meta.url));

const ACME = devKeySecret('console-acme');
const ACME_OPS = devKeySecret('console-acme-ops');
const GLOBEX = devKeySecret('console-globex');
const BOOT: Bootstrap = {
  orgs: [
    { org_id: 'acme', rps_cap: UNLIMITED_RPS },
    { org_id: 'globex', rps_cap: UNLIMITED_RPS },
  ],
  dev_keys: [
    { org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME },
    { org_id: 'acme', dev_key_id: 'dk-acme-ops', api_key: ACME_OPS },
    { org_id: 'globex', dev_key_id: 'dk-globex', api_key: GLOBEX },
  ],
};
const SKILL = 'prompt_compaction';
/** sessions per canary arm of dk-acme's traffic */
const PER_ARM = 21;
const OPS_CALLS = 3;
const GLOBEX_CALLS = 3;
const FALLBACK_ID = 'acme-fallback';

/** session ids whose canary:50 arm of SKILL is `arm` (drawn as the engine draws) */
function sessionsIn(arm: 'treatment' | 'control', n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (armFor(SKILL, 'canary:50', `cs-${i}`, 'unused') === arm) out.push(`cs-${i}`);
  return out;
}

/** The documented routes (OPERATIONS, the table /openapi.json is generated from), to match the console's calls against. */
const DOCUMENTED = new Router(
  Object.keys(OPERATIONS).map((k) => {
    const [method, path] = k.split(' ') as [Route['method'], string];
    return { method, path, surface: SURFACES.public, handler: () => undefined };
  }),
);

interface Seen {
  method: string;
  url: URL;
  authorization: string | undefined;
}

describe('the web console in headless Chromium', { skip: SKIP }, () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  let browser: Browser;
  const acmeIds: string[] = [];
  const opsIds: string[] = [];
  const globexIds: string[] = [];
  const acmeKeyIds: string[] = [];
  /** every request each signed-in browser context made, by the key it signed in with */
  const seen = new Map<string, Seen[]>();
  /** uncaught page errors and CSP refusals */
  const faults: string[] = [];

  const chat = async (key: string, id: string, model: string, headers: Record<string, string> = {}) => {
    const r = await call(gw, '/v1/chat/completions', {
      key,
      headers: { 'x-gw-provider-key': 'sk-upstream', 'x-request-id': id, ...headers },
      body: { model, messages: [{ role: 'user', content: `hello from ${id}` }] },
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
  };
  const durableIds = async (key: string) => ((await call(gw, '/api/v1/tenant/requests?window=1h&limit=500', { key })).json['data'] as Array<{ request_id: string }> | undefined)?.map((r) => r.request_id) ?? [];

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap: BOOT, redis: true, env: { GW_UPSTREAM_OPENAI: fake.origin } });
    const lifecycle = await call(gw, `/api/v1/tenant/acme/skills/${SKILL}/lifecycle`, { key: ACME, body: { key_id: 'dk-acme', mode: 'canary:50', reason: 'console test canary' } });
    assert.equal(lifecycle.status, 200, JSON.stringify(lifecycle.json));
    for (const [i, session] of [...sessionsIn('treatment', PER_ARM), ...sessionsIn('control', PER_ARM)].entries()) {
      acmeIds.push(`acme-${i}`);
      await chat(ACME, `acme-${i}`, 'gpt-4o', { 'x-gw-session': session, 'x-gw-team': 'quant' });
    }
    for (let i = 0; i < OPS_CALLS; i++) {
      opsIds.push(`acme-ops-${i}`);
      await chat(ACME_OPS, `acme-ops-${i}`, 'gpt-4o-mini', { 'x-gw-team': 'research' });
    }
    // a first model that fails: the request logs that it tries the next candidate
    const fallback = await call(gw, '/v1/execute', {
      key: ACME,
      headers: { 'x-gw-provider-key': 'sk-upstream', 'x-request-id': FALLBACK_ID },
      body: { input: { messages: [{ role: 'user', content: 'Say hello.' }] }, target: { model: 'error_500', fallbacks: ['gpt-4o-mini'] } },
    });
    assert.equal(fallback.status, 200, JSON.stringify(fallback.json));
    for (let i = 0; i < GLOBEX_CALLS; i++) {
      globexIds.push(`globex-${i}`);
      await chat(GLOBEX, `globex-${i}`, 'gpt-4o', { 'x-gw-team': 'globex-team' });
    }
    const acmeAll = [...acmeIds, ...opsIds, FALLBACK_ID];
    await eventually(async () => {
      const listed = new Set(await durableIds(ACME));
      return acmeAll.every((id) => listed.has(id));
    }, 'acme\'s requests in the durable list');
    await eventually(async () => globexIds.every((id) => durableIds(GLOBEX).then((ids) => ids.includes(id))), 'globex\'s requests in the durable list');
    // the scorecard's samples go out in batches of their own, a second apart at most
    await eventually(async () => {
      const sizes = (await call(gw, `/api/v1/tenant/acme/skills/${SKILL}/scorecard?window=1h&key_id=dk-acme`, { key: ACME })).json['sample_size'] as Record<string, number>;
      return (sizes['treatment'] ?? 0) >= PER_ARM && (sizes['control'] ?? 0) >= PER_ARM;
    }, 'acme\'s scorecard samples');
    acmeKeyIds.push(...((await call(gw, '/api/v1/settings', { key: ACME })).json['dev_keys'] as Array<{ key_id: string }>).map((k) => k.key_id));
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
    await fake?.close();
  });

  /** A fresh browser tab whose every request and fault is recorded under `key`. */
  async function tab(key: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const log: Seen[] = [];
    seen.set(key, log);
    context.on('request', (r) => log.push({ method: r.method(), url: new URL(r.url()), authorization: r.headers()['authorization'] }));
    const page = await context.newPage();
    page.on('pageerror', (err) => faults.push(`page error: ${err.message}`));
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) faults.push(`console: ${m.text()}`);
    });
    return { context, page };
  }

  async function signIn(page: Page, key: string): Promise<void> {
    await page.goto(`${gw.url}/console`);
    await page.fill('#key', key);
    await page.click('#sign-in-form button[type=submit]');
    await page.waitForSelector('main[data-ready]');
  }

  /** Does `action` (which renders a page again) and waits for `name` to finish rendering; answers the page's text. */
  async function settle(page: Page, name: string, action: () => Promise<unknown>): Promise<string> {
    await page.evaluate(`document.getElementById('page').removeAttribute('data-ready')`);
    await action();
    await page.waitForSelector(`main[data-ready="${name}"]`);
    return page.locator('main').innerText();
  }

  /** Opens a view by its address. */
  const view = (page: Page, hash: string, name: string) => settle(page, name, () => page.evaluate(`location.hash = ${JSON.stringify(hash)}`));

  const shot = (page: Page, name: string) => page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });

  /** The cells of the table row whose first cell is `first`. */
  const rowCells = (page: Page, label: string, first: string) =>
    page.locator(`table[aria-label="${label}"] tbody tr`).filter({ has: page.locator('td:first-child', { hasText: new RegExp(`^${first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) }).locator('td').allInnerTexts();

  describe('signed in as acme', () => {
    let page: Page;
    before(async () => {
      ({ page } = await tab(ACME));
    });

    it('signs in with the developer key, kept in the tab\'s session storage only; a wrong key is refused', async () => {
      const nobody = devKeySecret('console-nobody');
      const { context, page: refused } = await tab(nobody);
      await refused.goto(`${gw.url}/console`);
      assert.ok(await refused.isVisible('#sign-in'));
      assert.ok(!(await refused.isVisible('#nav')));
      await shot(refused, 'sign-in');
      await refused.fill('#key', nobody);
      await refused.click('#sign-in-form button[type=submit]');
      await refused.waitForSelector('#sign-in-error:not([hidden])');
      assert.match(await refused.innerText('#sign-in-error'), /Not accepted/);
      assert.equal(await refused.evaluate('sessionStorage.length'), 0);
      assert.ok(!(await refused.isVisible('#nav')));
      await context.close();

      await page.goto(`${gw.url}/console`);

      await page.fill('#key', ACME);
      await page.click('#sign-in-form button[type=submit]');
      await page.waitForSelector('main[data-ready="usage"]');
      assert.match(await page.innerText('#who'), /org acme/);
      assert.equal(await page.evaluate('sessionStorage.getItem("gw-console-key")'), ACME);
      assert.equal(await page.evaluate('localStorage.length'), 0);
      assert.deepEqual(await page.context().cookies(), []);
      // a reload keeps the session; signing out forgets the key
      await page.reload();
      await page.waitForSelector('main[data-ready="usage"]');
      await page.click('#sign-out');
      await page.waitForSelector('#sign-in:not([hidden])');
      assert.equal(await page.evaluate('sessionStorage.length'), 0);
      await signIn(page, ACME);
    });

    it('usage: a chart over time grouped by the chosen dimension, with the totals the gateway counted', async () => {
      const text = await view(page, '#usage?group_by=model&window=24h&bucket=hour&metric=requests', 'usage');
      assert.match(text, /Requests by model, per hour, last 24h/);
      const api = (await call(gw, '/api/v1/usage?group_by=model&window=24h&bucket=hour', { key: ACME })).json['data'] as Array<{ model: string; requests: number }>;
      const byModel = (m: string) => api.filter((r) => r.model === m).reduce((n, r) => n + r.requests, 0);
      assert.equal(byModel('gpt-4o'), 2 * PER_ARM, 'the API counts every gpt-4o call sent');
      assert.equal((await rowCells(page, 'usage by model', 'gpt-4o'))[1], String(2 * PER_ARM));
      assert.equal((await rowCells(page, 'usage by model', 'gpt-4o-mini'))[1], String(byModel('gpt-4o-mini')));
      assert.ok((await page.locator('svg.chart rect.bar').count()) >= 2, 'a bar per model in the current hour');
      assert.deepEqual(await page.locator('.legend li').allInnerTexts().then((l) => l.sort()), [...new Set(api.map((r) => r.model))].sort());
      await shot(page, 'usage');

      // another dimension, chosen in the page
      await settle(page, 'usage', () => page.selectOption('select[name=group_by]', 'team'));
      assert.equal((await rowCells(page, 'usage by team', 'quant'))[1], String(2 * PER_ARM));
      assert.equal((await rowCells(page, 'usage by team', 'research'))[1], String(OPS_CALLS));
      await shot(page, 'usage-by-team');
    });

    it('requests: the durable list and the inspector feed list the requests sent, and filters narrow them', async () => {
      const durable = await view(page, '#requests?source=durable&window=1h', 'requests');
      for (const id of [...acmeIds, ...opsIds, FALLBACK_ID]) assert.ok(durable.includes(id), `${id} in the durable list`);
      // each candidate the fallback tried is a row of its own, under the one request id
      assert.equal(await page.locator('table[aria-label="requests"] tbody tr').count(), (await durableIds(ACME)).length);
      await shot(page, 'requests-durable');

      await page.fill('input[name=model]', 'gpt-4o-mini');
      await settle(page, 'requests', () => page.click('form.controls button[type=submit]'));
      const filtered = await page.locator('table[aria-label="requests"] tbody tr td:nth-child(2)').allInnerTexts();
      for (const id of opsIds) assert.ok(filtered.includes(id), `${id} is a gpt-4o-mini call`);
      assert.ok(!filtered.some((id) => acmeIds.includes(id)), 'no gpt-4o call is left');
      // a key filtered by its name
      await page.fill('input[name=model]', '');
      await page.fill('input[name=key_id]', 'dk-acme-ops');
      await settle(page, 'requests', () => page.click('form.controls button[type=submit]'));
      assert.deepEqual((await page.locator('table[aria-label="requests"] tbody tr td:nth-child(2)').allInnerTexts()).sort(), [...opsIds].sort());

      const recent = await view(page, '#requests?source=recent', 'requests');
      for (const id of [...acmeIds.slice(-5), ...opsIds, FALLBACK_ID]) assert.ok(recent.includes(id), `${id} in the inspector feed`);
      assert.match(recent, /this replica \(pid \d+\) served/);
      await shot(page, 'requests-recent');
    });

    it('a request: its row, decision record and its own log lines', async () => {
      const text = await view(page, `#requests/${FALLBACK_ID}`, 'requests');
      const { decision } = (await call(gw, `/api/v1/tenant/request/${FALLBACK_ID}`, { key: ACME })).json as { decision: { served_by: string; route: { provider: string; model: string; routed_model: string } } };
      assert.match(text, new RegExp(`Request ${FALLBACK_ID}`));
      assert.match(text, new RegExp(`Served by\\s+${decision.served_by}`));
      const route = `${decision.route.provider} · ${decision.route.model} → ${decision.route.routed_model}`;
      assert.ok(text.includes(route), `the route ${route}`);
      assert.ok((await page.locator('svg[aria-label="stage durations"] rect').count()) > 0, 'the stages drawn');
      const lines = await page.locator('table[aria-label="log lines"] tbody tr').allInnerTexts();
      assert.ok(lines.some((l) => l.includes('trying the next candidate')), JSON.stringify(lines));
      await shot(page, 'request');
    });

    it('skills: each key\'s modes, and a skill\'s scorecard with treatment and control side by side, a chart of the compared rates and the history', async () => {
      const text = await view(page, `#skills?key=dk-acme&skill=${SKILL}&window=1h`, 'skills');
      const card = (await call(gw, `/api/v1/tenant/acme/skills/${SKILL}/scorecard?window=1h&key_id=dk-acme`, { key: ACME })).json as {
        status: string;
        sample_size: { treatment: number; control: number; total: number };
        generic_metrics: { upstream_error_rate: { treatment: number | null; control: number | null } };
      };
      assert.ok(card.sample_size.treatment >= PER_ARM && card.sample_size.control >= PER_ARM, JSON.stringify(card.sample_size));
      assert.equal((await rowCells(page, 'skill modes', SKILL))[1], 'canary:50');
      assert.ok(text.includes(card.status), `status ${card.status}`);
      assert.ok(text.includes(`treatment ${card.sample_size.treatment} · control ${card.sample_size.control} · total ${card.sample_size.total}`), 'the sample sizes');
      assert.deepEqual(await page.locator('table[aria-label="scorecard figures"] thead th').allInnerTexts(), ['Figure', 'treatment', 'control']);
      assert.equal((await rowCells(page, 'scorecard figures', 'upstream_error_rate')).length, 3);
      assert.ok((await page.locator('svg[aria-label$="rates by arm"] rect.bar').count()) >= 2, 'both arms drawn');
      const history = await page.locator('table[aria-label="deployment history"] tbody tr').allInnerTexts();
      assert.ok(history.some((h) => h.includes('canary:50') && h.includes('console test canary')), JSON.stringify(history));
      await shot(page, 'skills');
    });

    it('spend & access: the cap and model access as stored, changed through the page', async () => {
      const text = await view(page, '#settings', 'settings');
      assert.match(text, /No spend cap/);
      assert.match(text, /Every catalog model is enabled/);
      const keys = await page.locator('table[aria-label="developer keys"] tbody tr').allInnerTexts();
      assert.ok(keys.some((k) => k.includes('dk-acme-ops')) && keys.some((k) => /dk-acme$/m.test(k)), JSON.stringify(keys));

      await page.fill('input[name=cap_usd]', '12.5');
      await page.selectOption('select[name=period]', 'day');
      await settle(page, 'settings', () => page.locator('form', { has: page.locator('input[name=cap_usd]') }).locator('button[type=submit]').click());
      const cap = (await call(gw, '/api/v1/settings', { key: ACME })).json['spend_cap'] as { cap_usd: number; period: string; consumed_usd: number };
      assert.deepEqual([cap.cap_usd, cap.period], [12.5, 'day']);
      assert.match(await page.locator('main').innerText(), /of \$12\.50 this day/);

      await page.uncheck('input[name=all]');
      for (const box of await page.locator('input[name=model]').all()) if ((await box.getAttribute('value')) !== 'gpt-4o') await box.uncheck();
      assert.match(await settle(page, 'settings', () => page.locator('form', { has: page.locator('input[name=all]') }).locator('button[type=submit]').click()), /Enabled: gpt-4o/);
      assert.deepEqual((await call(gw, '/api/v1/settings', { key: ACME })).json['model_access'], { models: ['gpt-4o'] });
      await shot(page, 'settings');
    });
  });

  describe('signed in as globex', () => {
    let page: Page;
    before(async () => {
      ({ page } = await tab(GLOBEX));
      await signIn(page, GLOBEX);
    });

    /** what only acme's data holds: its request ids, key names and ids, headers' values and transition reason */
    const acmeTraces = () => [...acmeIds, ...opsIds, FALLBACK_ID, 'dk-acme', ...acmeKeyIds, 'quant', 'research', 'console test canary'];
    const assertNothingOfAcme = (text: string, where: string, except: string[] = []) => {
      const leaked = acmeTraces().filter((t) => !except.includes(t) && text.includes(t));
      assert.deepEqual(leaked, [], `${where} shows acme's ${leaked.join(', ')}`);
    };

    it('sees its own requests and usage and nothing of acme on any page', async () => {
      const durable = await view(page, '#requests?source=durable&window=1h', 'requests');
      for (const id of globexIds) assert.ok(durable.includes(id), `${id} listed`);
      assertNothingOfAcme(durable, 'the durable list');
      await shot(page, 'tenant-b-requests');
      assertNothingOfAcme(await view(page, '#requests?source=recent', 'requests'), 'the inspector feed');
      const usage = await view(page, '#usage?group_by=team&window=24h&bucket=hour', 'usage');
      assert.equal((await rowCells(page, 'usage by team', 'globex-team'))[1], String(GLOBEX_CALLS));
      assertNothingOfAcme(usage, 'usage');
      assertNothingOfAcme(await view(page, '#usage?group_by=key&window=24h&bucket=hour', 'usage'), 'usage by key');
      const skills = await view(page, `#skills?skill=${SKILL}`, 'skills');
      assert.match(skills, /dk-globex/);
      assertNothingOfAcme(skills, 'skills');
      assertNothingOfAcme(await view(page, '#settings', 'settings'), 'spend & access');
    });

    it('cannot open an acme request or scorecard by its address: the gateway refuses, the page shows the refusal', async () => {
      const text = await view(page, '#requests/acme-0', 'requests');
      assert.match(text, /not_found/);
      assert.doesNotMatch(text, /Decision record|Log lines|gpt-4o/);
      // the id is the page's own address, echoed in the refusal; nothing else of acme's
      assertNothingOfAcme(text, 'an acme request\'s page', ['acme-0']);
      const skills = await view(page, `#skills?key=dk-acme&skill=${SKILL}`, 'skills');
      // an unknown key falls back to the caller's own: dk-acme is not among globex's keys
      assert.match(skills, /key dk-globex/);
      assertNothingOfAcme(skills, 'skills named with acme\'s key');
    });
  });

  it('read only the gateway\'s documented routes, each with the signed-in key, and ran without a CSP refusal or page error', () => {
    assert.equal(seen.size, 3);
    for (const [key, requests] of seen) {
      assert.ok(requests.some((r) => r.url.pathname.startsWith('/api/')), 'the console made its calls');
      for (const r of requests) {
        assert.equal(r.url.origin, gw.url, `${r.url} stays on the gateway`);
        assert.ok(!r.url.href.includes(key), `${r.url} carries no key`);
        const match = DOCUMENTED.match(r.method, r.url.pathname);
        assert.equal(match.kind, 'found', `${r.method} ${r.url.pathname} is a documented route`);
        if (r.url.pathname.startsWith('/api/')) assert.equal(r.authorization, `Bearer ${key}`, `${r.url.pathname} with the signed-in key`);
      }
    }
    assert.deepEqual(faults, []);
  });
});
