// The skill pool's worker entry when the gateway runs from its TypeScript
// source under tsx (tests, development). A Node 20 worker thread does not
// inherit the parent's `--import tsx` hooks, so this registers them in the
// thread before loading the entry. From dist/ the pool loads worker.js and
// this file is not used.
const { register } = await import('tsx/esm/api');
register();
const { default: runTask } = await import('./worker.ts');
export default runTask;
