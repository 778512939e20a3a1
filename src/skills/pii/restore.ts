import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { EventStreamScanner } from '../../providers/eventstream.js';
import { PLACEHOLDER } from './redact.js';

/**
 * Puts the caller's values back in the reply, on the main thread.
 *
 * Why a byte-level replace on JSON is valid: a placeholder is `[`, capitals,
 * `_`, digits and `]`, none of which JSON ever escapes, so wherever the model
 * wrote one inside a JSON string it appears verbatim in the bytes; and outside
 * a string `[LABEL_1]` is not valid JSON, so every occurrence in a JSON
 * document is inside a string. The value goes in JSON-escaped.
 *
 * Streams split text across events, so a placeholder may arrive as `[EMA` in
 * one delta and `IL_1]` in the next: each text channel (a choice, a content
 * block, a tool call's arguments) holds back a trailing `[…` that could still
 * become a placeholder (never more than the longest placeholder of the
 * request) and emits it with the channel's next delta, or in a delta of its
 * own before any other event.
 */

type Restore = Readonly<Record<string, string>>;

const jsonEscaped = (value: string) => JSON.stringify(value).slice(1, -1);

/** plain text with its placeholders replaced */
export const restoreText = (text: string, restore: Restore): string => text.replace(PLACEHOLDER, (p) => restore[p] ?? p);

/** JSON text (a whole reply, an event's payload) with its placeholders replaced by the JSON-escaped values */
export const restoreJsonText = (json: string, restore: Restore): string => json.replace(PLACEHOLDER, (p) => (p in restore ? jsonEscaped(restore[p]!) : p));

/** A whole (non-streamed) JSON reply. */
export const restoreBody = (body: Buffer, restore: Restore): Buffer => {
  const text = body.toString('utf8');
  const out = restoreJsonText(text, restore);
  return out === text ? body : Buffer.from(out);
};

/** One text channel's restorer: text in as it streams, restored text out, a partial placeholder held back. */
export class TextRestorer {
  private held = '';

  constructor(
    private readonly restore: Restore,
    /** the longest placeholder: the most a channel ever holds back */
    private readonly longest: number,
    /** the channel's text is JSON source (tool-call arguments): values go in JSON-escaped */
    private readonly json = false,
  ) {}

  push(delta: string, last = false): string {
    const text = this.held + delta;
    this.held = '';
    let keep = text.length;
    if (!last) {
      const open = text.lastIndexOf('[');
      if (open >= 0 && text.length - open < this.longest && /^\[[A-Z0-9_]*$/.test(text.slice(open))) keep = open;
    }
    this.held = text.slice(keep);
    const out = text.slice(0, keep);
    return this.json ? restoreJsonText(out, this.restore) : restoreText(out, this.restore);
  }

  /** what is held, restored as it stands (the channel ended) */
  flush(): string {
    return this.push('', true);
  }

  holding(): boolean {
    return this.held !== '';
  }
}

/** A text delta inside one decoded stream event. */
interface Delta {
  channel: string;
  json: boolean;
  text: string;
  set(text: string): void;
  /** the event also ends the channel (nothing may be held past it) */
  last: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const textAt = (obj: Obj, key: string, channel: string, json: boolean, last = false): Delta[] =>
  typeof obj[key] === 'string' ? [{ channel, json, last, text: obj[key], set: (t) => (obj[key] = t) }] : [];

/** The text deltas of one event in each surface's stream format. */
type Locate = (name: string | undefined, data: Obj) => Delta[];

const chatDeltas: Locate = (_name, data) =>
  (Array.isArray(data['choices']) ? data['choices'] : []).filter(isObj).flatMap((choice, i) => {
    const n = typeof choice['index'] === 'number' ? choice['index'] : i;
    const delta = choice['delta'];
    if (!isObj(delta)) return [];
    const last = choice['finish_reason'] !== null && choice['finish_reason'] !== undefined;
    const calls = (Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : []).filter(isObj).flatMap((c) => {
      const fn = c['function'];
      return isObj(fn) ? textAt(fn, 'arguments', `${n}/call/${String(c['index'])}`, true, last) : [];
    });
    return [...textAt(delta, 'content', `${n}`, false, last), ...calls];
  });

const responsesDeltas: Locate = (name, data) => {
  const type = data['type'] ?? name;
  if (type === 'response.output_text.delta') return textAt(data, 'delta', `${String(data['output_index'])}/${String(data['content_index'])}`, false);
  if (type === 'response.function_call_arguments.delta') return textAt(data, 'delta', `${String(data['output_index'])}/args`, true);
  return [];
};

const messagesDeltas: Locate = (_name, data) => {
  const delta = data['delta'];
  if (data['type'] !== 'content_block_delta' || !isObj(delta)) return [];
  const ch = String(data['index']);
  if (delta['type'] === 'text_delta') return textAt(delta, 'text', ch, false);
  if (delta['type'] === 'input_json_delta') return textAt(delta, 'partial_json', ch, true);
  return [];
};

const generateContentDeltas: Locate = (_name, data) =>
  (Array.isArray(data['candidates']) ? data['candidates'] : []).filter(isObj).flatMap((cand, i) => {
    const content = cand['content'];
    const last = cand['finishReason'] !== undefined;
    const parts = isObj(content) && Array.isArray(content['parts']) ? content['parts'].filter(isObj) : [];
    return parts.flatMap((p) => (p['thought'] === true ? [] : textAt(p, 'text', `${typeof cand['index'] === 'number' ? cand['index'] : i}`, false, last)));
  });

const executeDeltas: Locate = (name, data) => {
  if (name !== 'output.delta') return [];
  const calls = (Array.isArray(data['tool_calls']) ? data['tool_calls'] : []).filter(isObj).flatMap((c) => textAt(c, 'arguments', `call/${String(c['index'])}`, true));
  return [...textAt(data, 'content', 'content', false), ...calls];
};

const converseDeltas: Locate = (name, data) => {
  const delta = data['delta'];
  if (name !== 'contentBlockDelta' || !isObj(delta)) return [];
  const ch = String(data['contentBlockIndex']);
  const toolUse = delta['toolUse'];
  return [...textAt(delta, 'text', ch, false), ...(isObj(toolUse) ? textAt(toolUse, 'input', `${ch}/tool`, true) : [])];
};

const LOCATORS: Readonly<Record<string, Locate>> = {
  chat_completions: chatDeltas,
  cloudx: chatDeltas,
  responses: responsesDeltas,
  messages: messagesDeltas,
  generate_content: generateContentDeltas,
  execute: executeDeltas,
  converse: converseDeltas,
};

export interface RestoredEvent {
  name: string | undefined;
  data: Obj;
}

/**
 * A stream's events in, restored events out: each delta goes through its
 * channel's TextRestorer; any other event first releases what every channel
 * holds, as a copy of that channel's last delta event carrying the held text.
 * Strings outside deltas (a final whole reply) are restored whole.
 */
export class EventRestorer {
  private readonly channels = new Map<string, { text: TextRestorer; template: RestoredEvent }>();
  private readonly longest: number;

  constructor(
    private readonly locate: Locate,
    private readonly restore: Restore,
  ) {
    this.longest = Math.max(0, ...Object.keys(restore).map((p) => p.length));
  }

  push(name: string | undefined, data: Obj): RestoredEvent[] {
    const deltas = this.locate(name, data);
    const out = deltas.length === 0 ? this.release() : [];
    if (deltas.length > 0) {
      const template = { name, data: structuredClone(data) };
      for (const d of deltas) {
        let ch = this.channels.get(d.channel);
        if (ch === undefined) this.channels.set(d.channel, (ch = { text: new TextRestorer(this.restore, this.longest, d.json), template }));
        ch.template = template;
        d.set(ch.text.push(d.text, d.last));
      }
    }
    out.push({ name, data: JSON.parse(restoreJsonText(JSON.stringify(data), this.restore)) as Obj });
    return out;
  }

  /** some channel holds text back */
  holding(): boolean {
    for (const ch of this.channels.values()) if (ch.text.holding()) return true;
    return false;
  }

  /** the held text of every channel, each as a delta event of its own */
  release(): RestoredEvent[] {
    const out: RestoredEvent[] = [];
    for (const [channel, ch] of this.channels) {
      if (!ch.text.holding()) continue;
      const copy = { name: ch.template.name, data: structuredClone(ch.template.data) };
      for (const d of this.locate(copy.name, copy.data)) d.set(d.channel === channel ? ch.text.flush() : '');
      out.push(copy);
    }
    return out;
  }
}

/** Server-sent events (every surface but converse): restored event blocks out as the bytes come in. */
export class SseRestorer {
  private buffer = '';
  private readonly events: EventRestorer;

  constructor(locate: Locate, restore: Restore) {
    this.events = new EventRestorer(locate, restore);
  }

  push(chunk: Buffer | string): string {
    this.buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let out = '';
    for (let end = this.blockEnd(); end >= 0; end = this.blockEnd()) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end);
      out += this.block(block);
    }
    return out;
  }

  end(): string {
    const rest = this.buffer;
    this.buffer = '';
    return this.events.release().map(sseBlock).join('') + (rest === '' ? '' : this.block(rest));
  }

  /** the end of the first complete block, its blank line included; -1 when none is complete */
  private blockEnd(): number {
    const m = /\r?\n\r?\n/.exec(this.buffer);
    return m === null ? -1 : m.index + m[0].length;
  }

  private block(block: string): string {
    // nothing to restore or release: the block goes out as it came
    if (!block.includes('[') && !this.events.holding()) return block;
    const lines = block.split(/\r?\n/);
    const name = lines.find((l) => l.startsWith('event:'))?.slice(6).trim();
    const data = lines
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
      .join('\n');
    let parsed: unknown;
    try {
      parsed = data === '' ? undefined : JSON.parse(data);
    } catch {
      parsed = undefined;
    }
    // a comment, `[DONE]` or a non-JSON payload: release what is held, then the block as it came
    if (!isObj(parsed)) return this.events.release().map(sseBlock).join('') + block;
    return this.events.push(name, parsed).map(sseBlock).join('');
  }
}

const sseBlock = (e: RestoredEvent) => `${e.name === undefined ? '' : `event: ${e.name}\n`}data: ${JSON.stringify(e.data)}\n\n`;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** Bedrock ConverseStream's binary frames: each event's JSON payload restored, the frame re-encoded with fresh checksums. */
export class ConverseStreamRestorer {
  private out: Uint8Array[] = [];
  private readonly scanner: EventStreamScanner;
  private readonly events: EventRestorer;

  constructor(restore: Restore) {
    this.events = new EventRestorer(converseDeltas, restore);
    this.scanner = new EventStreamScanner(
      () => true,
      (m) => this.frame(m),
    );
  }

  push(chunk: Buffer): Buffer {
    this.scanner.push(chunk);
    return this.take();
  }

  end(): Buffer {
    for (const e of this.events.release()) this.out.push(this.encode(e, undefined));
    return this.take();
  }

  private take(): Buffer {
    const out = Buffer.concat(this.out);
    this.out = [];
    return out;
  }

  private frame(m: Message): void {
    const name = m.headers[':event-type']?.value;
    let data: unknown;
    try {
      data = m.headers[':message-type']?.value === 'event' ? JSON.parse(toUtf8(m.body)) : undefined;
    } catch {
      data = undefined;
    }
    if (!isObj(data) || typeof name !== 'string' || (!toUtf8(m.body).includes('[') && !this.events.holding())) {
      for (const e of this.events.release()) this.out.push(this.encode(e, m));
      this.out.push(codec.encode(m));
      return;
    }
    for (const e of this.events.push(name, data)) this.out.push(this.encode(e, m));
  }

  private encode(e: RestoredEvent, like: Message | undefined): Uint8Array {
    const headers: Message['headers'] = {
      ':message-type': { type: 'string', value: 'event' },
      ':event-type': { type: 'string', value: e.name ?? '' },
      ':content-type': { type: 'string', value: 'application/json' },
    };
    return codec.encode({ headers: like !== undefined && like.headers[':event-type']?.value === e.name ? like.headers : headers, body: fromUtf8(JSON.stringify(e.data)) });
  }
}

/** The stream restorer for a surface's reply stream (the caller's format: translation happens before it). */
export function streamRestorer(surface: string, restore: Restore): { push(chunk: Buffer): Buffer | string; end(): Buffer | string } | undefined {
  if (surface === 'converse') return new ConverseStreamRestorer(restore);
  const locate = LOCATORS[surface];
  return locate === undefined ? undefined : new SseRestorer(locate, restore);
}
