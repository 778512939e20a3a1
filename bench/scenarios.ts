import { STREAM_CHUNKS } from './fake-upstream.js';

/** One request shape the bench drives at every target, and how to tell its reply is right. */
export interface Scenario {
  id: 'json' | 'stream' | 'body32k';
  title: string;
  body: string;
  /** a reason when the reply is not what this scenario expects */
  problem(body: string): string | undefined;
}

export const PATH = '/v1/chat/completions';

function paddedBody(bytes: number): string {
  const shell = (content: string) => JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content }] });
  const filler = 'The quick brown fox jumps over the lazy dog. ';
  const room = bytes - Buffer.byteLength(shell(''));
  const content = filler.repeat(Math.ceil(room / filler.length)).slice(0, room);
  return shell(content);
}

const isCompletion = (body: string) => (body.includes('"object":"chat.completion"') ? undefined : `not a chat.completion: ${body.slice(0, 160)}`);

export const SCENARIOS: Scenario[] = [
  {
    id: 'json',
    title: 'small JSON',
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Say hello.' }] }),
    problem: isCompletion,
  },
  {
    id: 'stream',
    title: `${STREAM_CHUNKS}-chunk SSE stream`,
    body: JSON.stringify({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hello.' }] }),
    problem(body) {
      const chunks = body.split('\n\n').filter((e) => e.startsWith('data: {')).length;
      if (chunks !== STREAM_CHUNKS + 1) return `expected ${STREAM_CHUNKS} chunks and a usage chunk, got ${chunks}: ${body.slice(0, 160)}`;
      return body.includes('data: [DONE]') ? undefined : 'no [DONE]';
    },
  },
  {
    id: 'body32k',
    title: '32 KB request body',
    body: paddedBody(32 * 1024),
    problem: isCompletion,
  },
];
