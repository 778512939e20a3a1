import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePort } from '../helpers/wait.js';

describe("the tests' freePort", () => {
  it('gives a port below the ephemeral range, which no listen(0) elsewhere in the run can take, and not the same one twice', async () => {
    const rangeStart = Number.parseInt(await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'), 10);
    const ports = [await freePort(), await freePort(), await freePort()];
    assert.equal(new Set(ports).size, 3);
    for (const port of ports) assert.ok(port < rangeStart, `${port} is inside the ephemeral range from ${rangeStart}`);
    const server = createServer().listen(ports[0], '127.0.0.1');
    await once(server, 'listening');
    server.close();
  });
});
