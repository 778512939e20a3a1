/**
 * Starts the test suite's fake vendors (test/fakes/) on loopback ports and
 * prints the GW_UPSTREAM_* lines that point a gateway at them: a local
 * stand-in for every provider, for the README's examples and manual checks.
 *
 *   node --import tsx scripts/fake-vendors.ts > fakes.env   (then `source fakes.env`)
 *
 * The fakes answer by model name (`error_429`, `truncated`, `slow_500`, … as
 * documented in each test/fakes file). The OpenAI stand-in is the Azure fake,
 * which serves OpenAI's own `/v1/chat/completions` and `/v1/responses` too.
 * Vertex hosts two publishers on one origin, so its stand-in forwards
 * `publishers/anthropic` paths to the Anthropic fake and the rest to the Gemini fake.
 */
import { startFakeAnthropic } from '../test/fakes/anthropic.js';
import { startFakeAzure } from '../test/fakes/azure.js';
import { startFakeBedrock } from '../test/fakes/bedrock.js';
import { startFakeGemini } from '../test/fakes/gemini.js';
import { startFakeVendor, type FakeVendor } from '../test/fakes/server.js';

/** The access-key pair the fake Bedrock verifies SigV4 signatures with. */
export const DEMO_AWS_PAIR = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

/** One Vertex origin: Claude paths to the Anthropic fake, Gemini paths to the Gemini fake. */
async function startFakeVertex(): Promise<FakeVendor> {
  const anthropic = await startFakeAnthropic();
  const gemini = await startFakeGemini();
  const front = await startFakeVendor(async (req, res) => {
    const target = req.url.includes('/publishers/anthropic/') ? anthropic : gemini;
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'content-length' && k !== 'connection')) as Record<string, string>;
    const reply = await fetch(`${target.origin}${req.url}`, { method: req.method, headers, body: req.body });
    res.writeHead(reply.status, Object.fromEntries([...reply.headers].filter(([k]) => k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection')));
    for await (const chunk of reply.body ?? []) res.write(chunk);
    res.end();
  });
  return { ...front, close: () => Promise.all([front.close(), anthropic.close(), gemini.close()]).then(() => undefined) };
}

const fakes: Array<[setting: string, start: () => Promise<FakeVendor>]> = [
  ['GW_UPSTREAM_OPENAI', startFakeAzure],
  ['GW_UPSTREAM_CLOUDX', startFakeAzure],
  ['GW_UPSTREAM_MSGVENDOR', startFakeAnthropic],
  ['GW_UPSTREAM_GENVENDOR', startFakeGemini],
  ['GW_UPSTREAM_GENVENDOR_VERTEX', startFakeVertex],
  ['GW_UPSTREAM_CLOUDY', () => startFakeBedrock({ [DEMO_AWS_PAIR.accessKeyId]: DEMO_AWS_PAIR.secretAccessKey })],
];

const started: FakeVendor[] = [];
for (const [setting, start] of fakes) {
  const fake = await start();
  started.push(fake);
  process.stdout.write(`export ${setting}=${fake.origin}\n`);
}
process.stdout.write(`# cloudy access-key pair the fake verifies: ${DEMO_AWS_PAIR.accessKeyId}:${DEMO_AWS_PAIR.secretAccessKey}\n`);
const stop = () => void Promise.all(started.map((f) => f.close())).then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
