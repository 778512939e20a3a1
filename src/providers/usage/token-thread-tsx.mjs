// The tokenizer thread's entry when the gateway runs from its TypeScript
// source under tsx (tests, development): a Node 20 worker thread does not
// inherit the parent's `--import tsx` hooks, so they are registered here
// first. From dist/ the thread loads token-thread.js and this file is unused.
const { register } = await import('tsx/esm/api');
register();
await import('./token-thread.ts');
