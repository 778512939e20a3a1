import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { oneTenant, startTestGateway } from '../helpers/gateway.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const firstRunLines = (logs: readonly string[]) => logs.map((l) => JSON.parse(l) as { first_run?: boolean; level: number; msg: string }).filter((l) => l.first_run === true);

describe('first run', () => {
  it('with no orgs and no admin key, says once (at info) how to create an org and a key with the CLI', async () => {
    const gw = await startTestGateway({ env: { GW_ADMIN_KEY: '' } });
    try {
      const lines = firstRunLines(gw.logs);
      assert.equal(lines.length, 1);
      assert.equal(lines[0]?.level, 30);
      assert.match(lines[0]?.msg ?? '', /no orgs yet/);
      assert.match(lines[0]?.msg ?? '', /1\. set GW_ADMIN_KEY/);
      assert.match(lines[0]?.msg ?? '', /npm run admin -- orgs create acme/);
      assert.match(lines[0]?.msg ?? '', /npm run admin -- keys create acme/);
      assert.match(lines[0]?.msg ?? '', /GW_DEV=1/);
    } finally {
      await gw.close();
    }
  });

  it('with an admin key but no orgs, starts the steps at the CLI', async () => {
    const gw = await startTestGateway();
    try {
      const [line, ...more] = firstRunLines(gw.logs);
      assert.equal(more.length, 0);
      assert.match(line?.msg ?? '', /1\. npm run admin -- orgs create acme/);
      assert.doesNotMatch(line?.msg ?? '', /set GW_ADMIN_KEY/);
    } finally {
      await gw.close();
    }
  });

  it('says nothing once an org exists', async () => {
    const gw = await startTestGateway({ bootstrap: oneTenant().bootstrap, env: { GW_ADMIN_KEY: '' } });
    try {
      assert.deepEqual(firstRunLines(gw.logs), []);
    } finally {
      await gw.close();
    }
  });
});

describe('GW_DEV=1', () => {
  it('starts a working gateway in front of the fake vendors with a demo key it prints once, and exits cleanly on SIGTERM, leaving no temporary files', async () => {
    // the demo bootstrap is written to a temporary directory of its own (src/dev.ts)
    const devDirs = () => new Set(readdirSync(tmpdir()).filter((name) => name.startsWith('gw-dev-')));
    const before = devDirs();
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GW_')));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { ...env, GW_DEV: '1', GW_HOST: '127.0.0.1', GW_PORT: '0', GW_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const banner: string[] = [];
      for await (const line of createInterface({ input: child.stdout })) {
        banner.push(line);
        if (line.includes('admin CLI:')) break;
      }
      const text = banner.join('\n');
      const url = /demo gateway on (http:\/\/127\.0\.0\.1:\d+)/.exec(text)?.[1];
      const key = /developer key: (gw_[0-9A-Za-z]{40})/.exec(text)?.[1];
      assert.ok(url && key, text);
      assert.equal(text.match(/developer key:/g)?.length, 1, 'the key is printed once');
      // no provider header: the demo org's stored key and the fake OpenAI answer
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      });
      const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(typeof body.choices?.[0]?.message.content, 'string');
      // the web console the banner names is served
      const consoleUrl = /console: (\S+)/.exec(text)?.[1];
      assert.equal(consoleUrl, `${url}/console`, text);
      assert.equal((await fetch(consoleUrl)).status, 200);
    } finally {
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 0);
      assert.deepEqual([...devDirs()].filter((d) => !before.has(d)), [], 'the demo bootstrap directory is removed on exit');
    }
  });
});
