import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { armedSkills, isSecretSetting, loadSettings, SettingsError, SettingsSchema } from '../../src/settings.js';
import { clusterTarget, describeTarget, redisTargetOf } from '../../src/stores/redis/client.js';

const SECRETS_KEY = Buffer.alloc(32, 1).toString('base64');

/** Every GW_ setting the gateway is required to accept, with its required default (undefined: unset by default). */
const NAMED: Record<string, unknown> = {
  GW_HOST: '0.0.0.0',
  GW_PORT: 8080,
  GW_REDIS_URL: undefined,
  GW_REDIS_CLUSTER: undefined,
  GW_DATA_DIR: undefined,
  GW_ADMIN_KEY: undefined,
  GW_CONFIG_SECRET: undefined,
  GW_SECRETS_KEY: undefined,
  GW_BOOTSTRAP: undefined,
  GW_UPSTREAM_OPENAI: undefined,
  GW_UPSTREAM_CLOUDX: undefined,
  GW_UPSTREAM_MSGVENDOR: undefined,
  GW_UPSTREAM_GENVENDOR: undefined,
  GW_UPSTREAM_GENVENDOR_VERTEX: undefined,
  GW_UPSTREAM_CLOUDY: undefined,
  GW_LOG_LEVEL: 'info',
  GW_METRICS_PORT: undefined,
  GW_METRICS_PUBLIC: '1',
  GW_ALLOW_UWS_FALLBACK: '0',
  GW_DEFAULT_RPS_CAP: 50,
  GW_MAX_BODY_BYTES: 32 * 1024 * 1024,
  GW_REQUEST_DEADLINE_S: 600,
  GW_STREAM_IDLE_S: 300,
  GW_STREAM_DEADLINE_S: 3600,
  GW_QUEUE_WAIT_MAX_S: 10,
  GW_BYOK_STORE_TIMEOUT_S: 30,
  GW_LOOP_STALL_SHED_SHARE: 0.5,
  GW_LOOP_STALL_WINDOW_S: 10,
  GW_INGRESS_BUDGET: undefined,
  GW_SKILL_AUTO_ROLLBACK: 'agent_trajectory_compaction',
  GW_GUARDRAILS_MODEL_MODE: 'shadow',
};

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadSettings(env);
  } catch (err) {
    assert.ok(err instanceof SettingsError, String(err));
    return err.problems;
  }
  return [];
};

describe('settings', () => {
  it('every required GW_ variable is in the one schema', () => {
    const missing = Object.keys(NAMED).filter((k) => !(k in SettingsSchema.properties));
    assert.deepEqual(missing, []);
    assert.ok('GW_WORKERS' in SettingsSchema.properties);
  });

  it('an empty environment gets the documented defaults', () => {
    const s = loadSettings({}) as unknown as Record<string, unknown>;
    for (const [k, v] of Object.entries(NAMED)) assert.deepEqual(s[k], v, k);
  });

  it('GW_WORKERS defaults to the CPU count with Redis and to 1 on embedded (per-process) state', () => {
    assert.equal(loadSettings({ GW_REDIS_URL: 'redis://127.0.0.1:6379', GW_SECRETS_KEY: SECRETS_KEY }).GW_WORKERS, cpus().length);
    assert.equal(loadSettings({}).GW_WORKERS, 1);
    assert.equal(loadSettings({ GW_WORKERS: '3', GW_REDIS_URL: 'redis://x:6379', GW_SECRETS_KEY: SECRETS_KEY }).GW_WORKERS, 3);
  });

  it('environment strings are coerced to the declared types', () => {
    const s = loadSettings({ GW_PORT: '9001', GW_STREAM_IDLE_S: '0.25', GW_METRICS_PORT: '9100', GW_LOG_LEVEL: 'debug', GW_UPSTREAM_OPENAI: 'http://127.0.0.1:9001' });
    assert.equal(s.GW_PORT, 9001);
    assert.equal(s.GW_STREAM_IDLE_S, 0.25);
    assert.equal(s.GW_METRICS_PORT, 9100);
    assert.equal(s.GW_LOG_LEVEL, 'debug');
    assert.equal(s.GW_UPSTREAM_OPENAI, 'http://127.0.0.1:9001');
  });

  const bad: Array<[string, string]> = [
    ['GW_PORT', 'eighty'],
    ['GW_PORT', '70000'],
    ['GW_LOG_LEVEL', 'loud'],
    ['GW_REQUEST_DEADLINE_S', '-1'],
    ['GW_STREAM_IDLE_S', '0'],
    ['GW_METRICS_PUBLIC', 'yes'],
    ['GW_METRICS_PORT', '0'],
    ['GW_MAX_BODY_BYTES', '10'],
    ['GW_UPSTREAM_OPENAI', 'ftp://example.com'],
    ['GW_UPSTREAM_CLOUDY', 'http://host/with/path'],
    ['GW_REDIS_URL', 'http://127.0.0.1:6379'],
    ['GW_REDIS_CLUSTER', 'redis://10.0.0.1'],
    ['GW_REDIS_CLUSTER', '10.0.0.1:7000,10.0.0.2'],
    ['GW_REDIS_CLUSTER', 'http://10.0.0.1:7000'],
    ['GW_REDIS_CLUSTER', '10.0.0.1:7000/0'],
    ['GW_SECRETS_KEY', 'too-short'],
    ['GW_LOOP_STALL_SHED_SHARE', '1.5'],
    ['GW_GUARDRAILS_MODEL_MODE', 'block'],
    ['GW_ADMIN_KEY', 'short'],
    ['GW_IDP_GROUP_MAP', '[1,2]'],
  ];
  for (const [name, value] of bad) {
    it(`${name}=${value} is refused with a message naming it`, () => {
      const problems = problemsOf({ [name]: value });
      assert.ok(problems.some((p) => p.startsWith(`${name}:`)), `no problem names ${name}: ${JSON.stringify(problems)}`);
    });
  }

  it('every bad variable is named at once, unknown GW_ names too', () => {
    const problems = problemsOf({ GW_PORT: 'x', GW_LOG_LEVEL: 'loud', GW_NO_SUCH_SETTING: '1' });
    for (const name of ['GW_PORT', 'GW_LOG_LEVEL', 'GW_NO_SUCH_SETTING']) assert.ok(problems.some((p) => p.startsWith(`${name}:`)), name);
  });

  it('GW_REDIS_CLUSTER selects a cluster: seeds, credentials and TLS parsed; one Redis setting at a time; it needs GW_SECRETS_KEY and allows replicas like GW_REDIS_URL', () => {
    const s = loadSettings({ GW_REDIS_CLUSTER: 'rediss://gw:p%40ss@10.0.0.1:7000,redis-2.internal:7001', GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '2' });
    assert.deepEqual(redisTargetOf(s), { seeds: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-2.internal', port: 7001 }], username: 'gw', password: 'p@ss', tls: true });
    assert.equal(describeTarget(clusterTarget('redis://:secret@10.0.0.1:7000')), 'the cluster of 10.0.0.1:7000', 'no password in messages');
    assert.deepEqual(clusterTarget('127.0.0.1:7000,127.0.0.1:7001'), { seeds: [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }], tls: false });
    assert.equal(redisTargetOf(loadSettings({ GW_REDIS_URL: 'redis://127.0.0.1:6379', GW_SECRETS_KEY: SECRETS_KEY })), 'redis://127.0.0.1:6379');
    assert.equal(redisTargetOf(loadSettings({})), undefined);
    assert.ok(problemsOf({ GW_REDIS_CLUSTER: '10.0.0.1:7000', GW_REDIS_URL: 'redis://10.0.0.1:6379', GW_SECRETS_KEY: SECRETS_KEY }).some((p) => p.startsWith('GW_REDIS_CLUSTER: set either')));
    assert.ok(problemsOf({ GW_REDIS_CLUSTER: '10.0.0.1:7000' }).some((p) => p.startsWith('GW_SECRETS_KEY:')));
    assert.equal(loadSettings({ GW_REDIS_CLUSTER: '10.0.0.1:7000', GW_SECRETS_KEY: SECRETS_KEY }).GW_WORKERS, cpus().length);
  });

  it('GW_SKILL_AUTO_ROLLBACK names per-key skills: a misspelt or non-per-key one, which would arm no breaker, stops the start', () => {
    for (const value of ['agent_trajectory_compation', 'guardrails', 'agent_trajectory_compaction,pii']) {
      const problems = problemsOf({ GW_SKILL_AUTO_ROLLBACK: value });
      assert.ok(problems.some((p) => p.startsWith('GW_SKILL_AUTO_ROLLBACK:')), `${value}: ${JSON.stringify(problems)}`);
    }
    assert.deepEqual(problemsOf({ GW_SKILL_AUTO_ROLLBACK: 'agent_trajectory_compaction, semantic_cache' }), []);
    assert.deepEqual(armedSkills(loadSettings({ GW_SKILL_AUTO_ROLLBACK: 'agent_trajectory_compaction, semantic_cache' })), ['agent_trajectory_compaction', 'semantic_cache']);
    // a separator alone arms none
    assert.deepEqual(armedSkills(loadSettings({ GW_SKILL_AUTO_ROLLBACK: ',' })), []);
  });

  it('cross-field rules name the variable that is missing', () => {
    assert.ok(problemsOf({ GW_DATA_DIR: '/tmp/x' }).some((p) => p.startsWith('GW_SECRETS_KEY:')));
    assert.ok(problemsOf({ GW_WORKERS: '2' }).some((p) => p.startsWith('GW_WORKERS:')));
    assert.ok(problemsOf({ GW_IDP_ISSUER: 'https://idp' }).some((p) => p.startsWith('GW_IDP_JWKS:')));
  });

  // a bad value of each secret setting, shaped like the real thing so a leak is recognizable
  const badSecrets: Record<string, string> = {
    GW_SECRETS_KEY: 'c2VjcmV0LWtleS1tYXRlcmlhbC10aGF0LWxlYWtz',
    GW_SECRETS_KEY_PREVIOUS: `${SECRETS_KEY},not-a-key-but-secret-material`,
    GW_ADMIN_KEY: 'adm-leaky',
    GW_CONFIG_SECRET: 'cfg-leaky',
    GW_REDIS_URL: 'http://:hunter2-password@redis.internal:6379',
    GW_REDIS_CLUSTER: 'http://:hunter2-password@redis.internal:6379',
  };

  it('a bad secret setting is named, its value never printed', () => {
    for (const [name, value] of Object.entries(badSecrets)) {
      const problems = problemsOf({ [name]: value });
      assert.ok(problems.some((p) => p.startsWith(`${name}:`)), `${name}: ${JSON.stringify(problems)}`);
      const text = problems.join('\n');
      for (const piece of [value, ...value.split(/[,:@/]/).filter((p) => p.length >= 6)]) assert.equal(text.includes(piece), false, `${name} printed: ${text}`);
    }
  });

  it('every setting named like a credential is marked secret in the schema', () => {
    const credentialLike = Object.keys(SettingsSchema.properties).filter((k) => /KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|REDIS_URL/.test(k));
    assert.ok(credentialLike.length >= 5);
    assert.deepEqual(credentialLike.filter((k) => !isSecretSetting(k)), []);
    assert.equal(isSecretSetting('GW_PORT'), false);
  });

  it('an enum error names the allowed values once, not "must be equal to constant" per member', () => {
    const problems = problemsOf({ GW_LOG_LEVEL: 'loud', GW_GUARDRAILS_MODEL_MODE: 'block' });
    assert.deepEqual(problems, [
      'GW_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      'GW_GUARDRAILS_MODEL_MODE: must be one of shadow, enforce, off (got "block")',
    ]);
  });

  it('variables outside the GW_ prefix are ignored', () => {
    assert.doesNotThrow(() => loadSettings({ PATH: '/bin', PORT: 'nonsense' }));
  });

  it('`node src/main.ts` with a bad value exits non-zero, naming the variable', () => {
    const main = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', main], {
      env: { PATH: process.env['PATH'] ?? '', GW_PORT: 'not-a-port', GW_HOST: '127.0.0.1' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.notEqual(run.status, 0);
    assert.equal(run.signal, null, 'start-up hung instead of exiting');
    assert.match(run.stderr, /GW_PORT/);
  });

  it('`node src/main.ts` with a bad secret exits non-zero, naming it without printing it', () => {
    const main = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', main], {
      env: { PATH: process.env['PATH'] ?? '', GW_HOST: '127.0.0.1', GW_PORT: '0', GW_ADMIN_KEY: badSecrets['GW_ADMIN_KEY']!, GW_SECRETS_KEY: badSecrets['GW_SECRETS_KEY']! },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /GW_ADMIN_KEY/);
    assert.match(run.stderr, /GW_SECRETS_KEY/);
    assert.equal(run.stderr.includes(badSecrets['GW_ADMIN_KEY']!), false, run.stderr);
    assert.equal(run.stderr.includes(badSecrets['GW_SECRETS_KEY']!), false, run.stderr);
  });
});
