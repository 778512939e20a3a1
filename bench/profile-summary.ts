import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self and inclusive time
 * per function, and self time per module, as shares of the busy (non-idle)
 * time. Positions in dist/ are mapped back to src/*.ts through the source maps.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [top=15] [requests]
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Entry {
  /** function name and where it is, as "name (file:line)" */
  label: string;
  module: string;
  micros: number;
  share: number;
}

export interface Summary {
  busyMicros: number;
  idleMicros: number;
  self: Entry[];
  /** functions of the gateway's own src/, time including what they call */
  inclusiveSrc: Entry[];
  modules: Entry[];
  /** time inside a module including what it calls (a library's own dependencies, the runtime) */
  inclusiveModules: Entry[];
}

const ROOT = resolve(import.meta.dirname, '..');
const IDLE = '(idle)';
const ROOT_FRAME = '(root)';

class Locator {
  private maps = new Map<string, SourceMap | undefined>();

  private mapFor(file: string): SourceMap | undefined {
    if (!this.maps.has(file)) {
      const mapFile = `${file}.map`;
      this.maps.set(file, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]) : undefined);
    }
    return this.maps.get(file);
  }

  /** "file:line" (1-based) relative to the repository, through the source map when there is one */
  where(frame: CallFrame): string {
    if (!frame.url) return '';
    if (!frame.url.startsWith('file://')) return `${frame.url}:${frame.lineNumber + 1}`;
    const file = fileURLToPath(frame.url);
    const hit = this.mapFor(file)?.findEntry(frame.lineNumber, frame.columnNumber);
    if (hit && 'originalSource' in hit && hit.originalSource) {
      const source = hit.originalSource.startsWith('file://') ? fileURLToPath(hit.originalSource) : resolve(dirname(file), hit.originalSource);
      return `${relative(ROOT, source)}:${hit.originalLine + 1}`;
    }
    return `${relative(ROOT, file)}:${frame.lineNumber + 1}`;
  }
}

/** The package, src/ file or runtime area a frame belongs to. */
function moduleOf(frame: CallFrame, where: string): string {
  if (!frame.url) return frame.functionName.startsWith('(') ? frame.functionName : '(native / builtins)';
  if (frame.url.startsWith('node:')) return 'node: core';
  if (frame.url.startsWith('wasm://')) return 'wasm (undici llhttp parser)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where);
  if (nm) return nm[1]!;
  return where.replace(/:\d+$/, '');
}

function top(totals: Map<string, { module: string; micros: number }>, busy: number, n: number): Entry[] {
  return [...totals.entries()]
    .sort((a, b) => b[1].micros - a[1].micros)
    .slice(0, n)
    .map(([label, v]) => ({ label, module: v.module, micros: v.micros, share: v.micros / busy }));
}

export function summarise(file: string, n = 15): Summary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const locate = new Locator();
  const byId = new Map<number, ProfileNode>(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
  const info = new Map<number, { label: string; module: string; src: boolean }>();
  for (const node of profile.nodes) {
    const where = locate.where(node.callFrame);
    const name = node.callFrame.functionName || '(anonymous)';
    info.set(node.id, { label: where ? `${name} (${where})` : name, module: moduleOf(node.callFrame, where), src: where.startsWith('src/') });
  }

  // a sample's weight is the interval until the next sample
  const selfByNode = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfByNode.set(id, (selfByNode.get(id) ?? 0) + dt);
  }

  let idle = 0;
  let busy = 0;
  const self = new Map<string, { module: string; micros: number }>();
  const modules = new Map<string, { module: string; micros: number }>();
  const inclusive = new Map<string, { module: string; micros: number }>();
  const inclusiveModules = new Map<string, { module: string; micros: number }>();
  const add = (m: Map<string, { module: string; micros: number }>, key: string, module: string, dt: number) => {
    const e = m.get(key);
    if (e) e.micros += dt;
    else m.set(key, { module, micros: dt });
  };
  for (const [id, dt] of selfByNode) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === IDLE) {
      idle += dt;
      continue;
    }
    busy += dt;
    const me = info.get(id)!;
    add(self, me.label, me.module, dt);
    add(modules, me.module, me.module, dt);
    // every distinct src/ function and module on the stack gets the sample once (recursion counted once)
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = info.get(at)!;
      if (frame.src && !seen.has(frame.label)) {
        seen.add(frame.label);
        add(inclusive, frame.label, frame.module, dt);
      }
      if (frame.module !== ROOT_FRAME && !seen.has(`module ${frame.module}`)) {
        seen.add(`module ${frame.module}`);
        add(inclusiveModules, frame.module, frame.module, dt);
      }
    }
  }
  return {
    busyMicros: busy,
    idleMicros: idle,
    self: top(self, busy, n),
    inclusiveSrc: top(inclusive, busy, n),
    modules: top(modules, busy, n),
    inclusiveModules: top(inclusiveModules, busy, n),
  };
}

function entriesTable(entries: Entry[], heading: string, requests: number | undefined): string {
  const perReq = requests ? ' | ≈ µs/req' : '';
  const lines = entries.map((e) => `| ${e.label.replace(/\|/g, '\\|')} | ${(e.share * 100).toFixed(1)} %${requests ? ` | ${(e.micros / requests).toFixed(1)}` : ''} |`);
  return [`| ${heading} | share of busy${perReq} |`, `|---|--:${requests ? '|--:' : ''}|`, ...lines].join('\n');
}

/** Markdown for docs/performance.md; `requests` (served while profiling) adds a µs-per-request column. */
export function summaryMarkdown(s: Summary, requests?: number): string {
  return [
    `Busy ${(s.busyMicros / 1e6).toFixed(2)} s of main-thread samples (idle ${(s.idleMicros / 1e6).toFixed(2)} s)${requests ? ` for ${requests} requests` : ''}.`,
    '',
    'Top functions by self time:',
    '',
    entriesTable(s.self, 'function (file:line)', requests),
    '',
    'Self time by module or package:',
    '',
    entriesTable(s.modules, 'module', requests),
    '',
    'Time inside a module or package including what it calls (pino includes its redaction and destination; for callback-driven code such as undici and its parser this includes the callbacks it runs):',
    '',
    entriesTable(s.inclusiveModules, 'module', requests),
    '',
    "The gateway's own functions by inclusive time (the function and everything it calls):",
    '',
    entriesTable(s.inclusiveSrc, 'function (file:line)', requests),
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, n, requests] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: profile-summary.ts <file.cpuprofile> [top=15] [requests]\n');
    process.exit(2);
  }
  process.stdout.write(`${summaryMarkdown(summarise(file, Number(n ?? 15)), requests ? Number(requests) : undefined)}\n`);
}
