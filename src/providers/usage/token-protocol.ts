import type { MessagePort } from 'node:worker_threads';

/**
 * The tokenizer thread's shared Int32Array (tokenizer.ts, token-thread.ts).
 * PROGRESS says how far the thread is: 2 × seq once it took request `seq`,
 * 2 × seq + 1 once it answered it, so the main thread can tell a thread that
 * never took a request (gone) from one still counting a long text.
 */
/** the sequence number of the newest request posted */
export const REQUESTED = 0;
export const PROGRESS = 1;
/** the answer's token count, or FAILED */
export const COUNT = 2;
export const SLOTS = 3;
/** the count of a text the tokenizer threw on */
export const FAILED = -1;

export const taken = (seq: number): number => 2 * seq;
export const answered = (seq: number): number => 2 * seq + 1;

export interface TokenRequest {
  seq: number;
  text: string;
}

export interface TokenThreadData {
  shared: Int32Array<SharedArrayBuffer>;
  /** the requests come in on it (transferred) */
  port: MessagePort;
}
