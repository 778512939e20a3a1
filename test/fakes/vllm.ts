import type { ServerResponse } from 'node:http';
import { sendJson, startFakeVendor, type FakeVendor, type Recorded } from './server.js';

/**
 * A fake vLLM OpenAI-compatible server: chat completions (whole and streamed,
 * with usage), `GET /v1/models` listing the base models and the loaded LoRA
 * adapters (with `parent`), and the dynamic LoRA API (`POST
 * /v1/load_lora_adapter`, `POST /v1/unload_lora_adapter`) answering as vLLM
 * does: a plain-text success line, or vLLM's error object. Its adapter memory
 * is a budget: a load past it is refused. Calls can be held open (`hold`) to
 * keep them in flight, and loads likewise (`holdLoads`). An adapter whose path
 * contains `missing` is refused as vLLM refuses a path with no adapter.
 */
export interface FakeVllmOptions {
  /** base model ids it serves */
  models: string[];
  /** adapter memory; a load past it is refused (unset: no limit) */
  memoryMb?: number;
  /** size of each adapter by its path (default 1) */
  sizes?: Record<string, number>;
  /** adapters loaded before the gateway starts: name → {path, parent} */
  preloaded?: Record<string, { path: string; parent: string }>;
  /** the bearer key it requires, if any */
  apiKey?: string;
}

export interface FakeVllm extends FakeVendor {
  /** adapters loaded now, name → base */
  readonly loaded: ReadonlyMap<string, { path: string; parent: string }>;
  /** chat calls waiting on `hold` now */
  readonly held: number;
  /** loads waiting on `holdLoads` now */
  readonly heldLoads: number;
  /** from now on chat calls (to `model` only, when named) wait until `release` */
  hold(model?: string): void;
  release(): void;
  holdLoads(): void;
  releaseLoads(): void;
  /** the requests received on a path */
  calls(path: string): Recorded[];
}

/** vLLM's error body (its ErrorResponse) */
const vllmError = (res: ServerResponse, status: number, type: string, message: string) => sendJson(res, status, { object: 'error', message, type, param: null, code: status });

const success = (res: ServerResponse, text: string) => {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

class Gate {
  private waiting: Array<() => void> = [];
  private closed = false;
  get count(): number {
    return this.waiting.length;
  }
  close(): void {
    this.closed = true;
  }
  open(): void {
    this.closed = false;
    for (const w of this.waiting.splice(0)) w();
  }
  pass(): Promise<void> | undefined {
    return this.closed ? new Promise<void>((r) => this.waiting.push(r)) : undefined;
  }
}

export async function startFakeVllm(opts: FakeVllmOptions): Promise<FakeVllm> {
  const loaded = new Map<string, { path: string; parent: string }>(Object.entries(opts.preloaded ?? {}));
  const size = (path: string) => opts.sizes?.[path] ?? 1;
  const chats = new Gate();
  const loads = new Gate();
  const base = opts.models[0] as string;
  let heldModel: string | undefined;

  const vendor = await startFakeVendor(async (req, res) => {
    if (opts.apiKey !== undefined && req.headers['authorization'] !== `Bearer ${opts.apiKey}`) return vllmError(res, 401, 'Unauthorized', 'Unauthorized');
    if (req.method === 'GET' && req.url === '/v1/models') {
      const data = [
        ...opts.models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'vllm', root: id, parent: null, max_model_len: 32768 })),
        ...[...loaded].map(([id, a]) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'vllm', root: a.path, parent: a.parent, max_model_len: null })),
      ];
      return sendJson(res, 200, { object: 'list', data });
    }
    const doc = JSON.parse(req.body.toString('utf8') || '{}') as Record<string, unknown>;
    if (req.url === '/v1/load_lora_adapter') {
      await loads.pass();
      const name = String(doc['lora_name']);
      const path = String(doc['lora_path']);
      if (loaded.has(name)) return vllmError(res, 400, 'BadRequestError', `The lora adapter '${name}' has already been loaded.`);
      if (path.includes('missing')) return vllmError(res, 404, 'NotFoundError', `No adapter found for ${path}`);
      const used = [...loaded.values()].reduce((s, a) => s + size(a.path), 0);
      if (opts.memoryMb !== undefined && used + size(path) > opts.memoryMb) {
        return vllmError(res, 400, 'BadRequestError', `Loading lora ${name} failed: not enough memory for the adapter (${used + size(path)} MB > ${opts.memoryMb} MB)`);
      }
      loaded.set(name, { path, parent: base });
      return success(res, `Success: LoRA adapter '${name}' added successfully.`);
    }
    if (req.url === '/v1/unload_lora_adapter') {
      const name = String(doc['lora_name']);
      if (!loaded.delete(name)) return vllmError(res, 404, 'NotFoundError', `The lora adapter '${name}' cannot be found.`);
      return success(res, `Success: LoRA adapter '${name}' removed successfully.`);
    }
    if (req.url !== '/v1/chat/completions') return vllmError(res, 404, 'NotFoundError', `Not Found: ${req.url}`);
    const model = String(doc['model']);
    if (!opts.models.includes(model) && !loaded.has(model)) return vllmError(res, 404, 'NotFoundError', `The model \`${model}\` does not exist.`);
    if (heldModel === undefined || heldModel === model) await chats.pass();
    const options = doc['stream_options'] as { include_usage?: boolean } | undefined;
    if (doc['stream'] === true) return stream(res, model, options?.include_usage === true);
    sendJson(res, 200, {
      id: 'chatcmpl-vllm1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: `Hello from ${model}.`, tool_calls: [] }, logprobs: null, finish_reason: 'stop', stop_reason: null }],
      usage: { prompt_tokens: 20, total_tokens: 30, completion_tokens: 10, prompt_tokens_details: null },
      prompt_logprobs: null,
    });
  });

  const counts = Object.defineProperties(vendor, {
    held: { get: () => chats.count },
    heldLoads: { get: () => loads.count },
  }) as FakeVendor & Pick<FakeVllm, 'held' | 'heldLoads'>;
  return Object.assign(counts, {
    loaded,
    hold: (model?: string) => {
      heldModel = model;
      chats.close();
    },
    release: () => chats.open(),
    holdLoads: () => loads.close(),
    releaseLoads: () => loads.open(),
    calls: (path: string) => vendor.received.filter((r) => r.url === path),
  });
}

const chunk = (model: string, choices: unknown[], usage?: unknown) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-vllm1', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices, ...(usage === undefined ? {} : { usage }) })}\n\n`;

function stream(res: ServerResponse, model: string, includeUsage: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  res.write(chunk(model, [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
  for (const word of ['Hello', ' from', ` ${model}.`]) res.write(chunk(model, [{ index: 0, delta: { content: word }, logprobs: null, finish_reason: null }]));
  res.write(chunk(model, [{ index: 0, delta: { content: '' }, logprobs: null, finish_reason: 'stop', stop_reason: null }]));
  if (includeUsage) res.write(chunk(model, [], { prompt_tokens: 20, total_tokens: 30, completion_tokens: 10 }));
  res.end('data: [DONE]\n\n');
}
