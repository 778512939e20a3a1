import type * as GptTokenizer from 'gpt-tokenizer';
import { createRequire } from 'node:module';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { answered, COUNT, FAILED, PROGRESS, REQUESTED, SLOTS, taken, type TokenRequest, type TokenThreadData } from './token-protocol.js';

/**
 * Token counts on the main thread (a stream that ended without usage, the
 * local count_tokens estimate), run by a thread of their own. The tokenizer's
 * ranks are about 200,000 strings and a map of them: held in the main
 * thread's heap, every full collection marked them, and under the 32 KB PII
 * load those collections came every one or two seconds with pauses of 10 to
 * 30 ms. Loading them takes about 300 ms, so they cannot be loaded on first
 * use either. The call stays synchronous: the main thread waits for the
 * answer as it waited for its own count, plus a thread hop.
 */

/** the entry beside this file: compiled JavaScript from dist/, or under tsx a shim that loads tsx into the thread first */
const ENTRY = new URL(import.meta.url.endsWith('.ts') ? './token-thread-tsx.mjs' : './token-thread.js', import.meta.url);

export interface TokenThreadOptions {
  /** the thread's entry (tests give one that never answers) */
  entry?: URL;
  /** how long the thread may take to take up a request once it has answered one */
  takeMs?: number;
  /** the same for its first request, the tokenizer's loading included */
  firstTakeMs?: number;
  /** how long a count it took up may run before the thread is taken for lost (a pathological text takes seconds in any tokenizer) */
  countMs?: number;
}

/** The in-process tokenizer, loaded only when the thread did not answer: correct counts whatever became of it. */
let inProcess: ((text: string) => number) | undefined;
function countHere(text: string): number {
  if (inProcess === undefined) {
    const { countTokens } = createRequire(import.meta.url)('gpt-tokenizer') as typeof GptTokenizer;
    const anyText = { disallowedSpecial: new Set<string>() };
    inProcess = (t) => countTokens(t, anyText);
  }
  return text === '' ? 0 : inProcess(text);
}

export class TokenThread {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  /** the thread died or did not answer in time: this process counts in place from then on */
  private failed = false;
  private shared = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
  private seq = 0;
  /** the running thread has answered a request or said it is ready */
  private proven = false;
  /** settles once the running thread's tokenizer has loaded (start) */
  private ready: Promise<void> | undefined;
  private readonly entry: URL;
  private readonly takeMs: number;
  private readonly firstTakeMs: number;
  private readonly countMs: number;

  constructor(opts: TokenThreadOptions = {}) {
    this.entry = opts.entry ?? ENTRY;
    this.takeMs = opts.takeMs ?? 1_000;
    this.firstTakeMs = opts.firstTakeMs ?? 5_000;
    this.countMs = opts.countMs ?? 60_000;
  }

  /**
   * Starts the thread, if none runs, and resolves once its tokenizer has
   * loaded: the gateway awaits this before it listens, so no request waits
   * for the loading. Every gateway of a process shares the one thread.
   */
  start(): Promise<void> {
    if (this.failed) return Promise.resolve();
    if (this.worker !== undefined && this.ready !== undefined) return this.ready;
    const worker = this.spawn();
    // held open while the start is awaited, so a thread that fails to load is seen to
    worker.ref();
    this.ready = new Promise<void>((resolve, reject) => {
      let cause = '';
      worker.once('error', (err) => (cause = `: ${err.message}`));
      worker.once('message', () => {
        worker.unref();
        if (this.worker === worker) this.proven = true;
        resolve();
      });
      worker.once('exit', (code) => reject(new Error(`the tokenizer thread exited (code ${code}) before its tokenizer loaded${cause}`)));
    });
    return this.ready;
  }

  /** the thread failed or was given up: this process's counts are made on the main thread from then on */
  get countingInPlace(): boolean {
    return this.failed;
  }

  /** Tokens of `text` (special tokens counted as text). */
  count(text: string): number {
    if (text === '') return 0;
    if (this.failed) return countHere(text);
    if (this.worker === undefined) this.spawn();
    const seq = ++this.seq;
    const request: TokenRequest = { seq, text };
    (this.port as MessagePort).postMessage(request);
    Atomics.store(this.shared, REQUESTED, seq);
    Atomics.notify(this.shared, REQUESTED);
    // a thread that has not taken the request in time is gone; one that took it is given as long as a count can take
    const sent = performance.now();
    for (let at = Atomics.load(this.shared, PROGRESS); at !== answered(seq); at = Atomics.load(this.shared, PROGRESS)) {
      const limit = at === taken(seq) ? this.countMs : this.proven ? this.takeMs : this.firstTakeMs;
      const left = sent + limit - performance.now();
      if (left <= 0) return this.replaced(text);
      Atomics.wait(this.shared, PROGRESS, at, left);
    }
    this.proven = true;
    const count = Atomics.load(this.shared, COUNT);
    return count === FAILED ? countHere(text) : count;
  }

  /** Stops the thread; a later count starts another. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.forget();
    // held open until it has exited, so whoever awaits this sees it gone
    worker?.ref();
    await worker?.terminate();
  }

  private spawn(): Worker {
    const { port1, port2 } = new MessageChannel();
    this.shared = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
    this.seq = 0;
    this.proven = false;
    const data: TokenThreadData = { shared: this.shared, port: port2 };
    const worker = new Worker(this.entry, { workerData: data, transferList: [port2] });
    // it never holds the process open; a thread that dies makes the process count in place from then on
    worker.unref();
    port1.unref();
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.failed = true;
      this.forget();
    });
    this.worker = worker;
    this.port = port1;
    return worker;
  }

  /** The thread did not take the request, or its count ran past countMs: this count and every later one are made here. */
  private replaced(text: string): number {
    this.failed = true;
    void this.stop();
    return countHere(text);
  }

  private forget(): void {
    this.port?.close();
    this.port = undefined;
    this.worker = undefined;
    this.ready = undefined;
  }
}

/** the process's tokenizer thread */
export const tokenThread = new TokenThread();

/** Tokens of `text` by the process's tokenizer thread. */
export const countTokens = (text: string): number => tokenThread.count(text);
