// The built gateway with an empty skills table: the request skeleton's own cost with no skill stage
// (not even the guardrails), for the bench's "skills off" target. Production always runs the guardrails.
// `node bench/gateway-skills-off.mjs <dist>` starts another checkout's build the same way (the bench's
// `baseline` target); a build older than the skills table ignores the option and runs no skill stage either.
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const baseline = process.argv[2];
const dist = baseline ?? resolve(import.meta.dirname, '../dist');
const { loadSettings, SettingsSchema } = await import(pathToFileURL(join(dist, 'src/settings.js')).href);
const { startGateway } = await import(pathToFileURL(join(dist, 'src/main.js')).href);

// an older build refuses a setting it does not know, and the bench sets some that came later
const known = SettingsSchema?.properties;
if (baseline && known) for (const name of Object.keys(process.env)) if (name.startsWith('GW_') && !(name in known)) delete process.env[name];

const gw = await startGateway(loadSettings(), { skillRows: [] });
const stop = () => gw.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
