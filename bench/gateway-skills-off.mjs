// The built gateway with an empty skills table: the request skeleton's own cost with no skill stage
// (not even the guardrails), for the bench's "skills off" target. Production always runs the guardrails.
import { loadSettings } from '../dist/src/settings.js';
import { startGateway } from '../dist/src/main.js';

const gw = await startGateway(loadSettings(), { skillRows: [] });
const stop = () => gw.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
