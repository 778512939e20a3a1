import { countTokens } from 'gpt-tokenizer';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { answered, COUNT, FAILED, PROGRESS, REQUESTED, taken, type TokenRequest, type TokenThreadData } from './token-protocol.js';

/**
 * The tokenizer's own thread (tokenizer.ts): its ranks (about 200,000
 * strings and a map of them) live in this isolate's heap, so the main
 * thread's full collections never mark them. It blocks between requests;
 * the main thread waits on it synchronously, as it would on its own count.
 */
const { shared, port } = workerData as TokenThreadData;
const ANY_TEXT = { disallowedSpecial: new Set<string>() };

// loaded: the gateway's start waits for this
parentPort?.postMessage('ready');
let handled = 0;
for (;;) {
  Atomics.wait(shared, REQUESTED, handled);
  handled = Atomics.load(shared, REQUESTED);
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
    const { seq, text } = m.message as TokenRequest;
    Atomics.store(shared, PROGRESS, taken(seq));
    Atomics.notify(shared, PROGRESS);
    let count: number;
    try {
      count = text === '' ? 0 : countTokens(text, ANY_TEXT);
    } catch {
      count = FAILED;
    }
    Atomics.store(shared, COUNT, count);
    Atomics.store(shared, PROGRESS, answered(seq));
    Atomics.notify(shared, PROGRESS);
  }
}
