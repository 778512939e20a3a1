import { pino, type Logger } from 'pino';

/** A request keeps at most this many of its own log lines (the request-log route's limit). */
export const MAX_REQUEST_LINES = 2000;

/** One captured line as the request-log route answers it. */
export interface LogLine {
  seq: number;
  ts: string;
  level: string;
  logger: string;
  msg: string;
  [field: string]: unknown;
}

export interface LineQuery {
  /** only lines after this seq */
  after: number;
  limit: number;
  /** this level or more severe */
  minLevel: number | undefined;
  /** a substring of the message */
  q: string | undefined;
  logger: string | undefined;
}

type PinoStream = { write(s: string): unknown; flush?: (cb?: () => void) => void };
const STREAM = pino.symbols.streamSym;
const LINES = Symbol('gw.requestLines');
const LEVELS = pino.levels.labels;
/** fields of a pino line that the route renders under its own names */
const OWN_FIELDS = new Set(['time', 'level', 'msg', 'pid', 'req_id', 'logger']);

/**
 * The lines one request logged through its own logger, as written (after
 * credential redaction), kept raw and parsed only when read. Lines past
 * MAX_REQUEST_LINES are counted, not kept.
 */
export class RequestLines implements PinoStream {
  private readonly raw: string[] = [];
  dropped = 0;

  constructor(private readonly destination: PinoStream) {}

  write(s: string): unknown {
    if (this.raw.length < MAX_REQUEST_LINES) this.raw.push(s);
    else this.dropped++;
    return this.destination.write(s);
  }

  flush(cb?: () => void): void {
    if (this.destination.flush) this.destination.flush(cb);
    else cb?.();
  }

  read(query: LineQuery): LogLine[] {
    const out: LogLine[] = [];
    for (let i = query.after; i < this.raw.length && out.length < query.limit; i++) {
      const line = toLogLine(i + 1, this.raw[i] as string);
      if (query.minLevel !== undefined && (pino.levels.values[line.level] ?? 0) < query.minLevel) continue;
      if (query.logger !== undefined && line.logger !== query.logger) continue;
      if (query.q !== undefined && !line.msg.includes(query.q)) continue;
      out.push(line);
    }
    return out;
  }
}

function toLogLine(seq: number, raw: string): LogLine {
  const parsed = JSON.parse(raw) as Record<string, unknown>;
  const line: LogLine = {
    seq,
    ts: String(parsed['time']),
    level: LEVELS[Number(parsed['level'])] ?? String(parsed['level']),
    logger: typeof parsed['logger'] === 'string' ? parsed['logger'] : 'gateway',
    msg: typeof parsed['msg'] === 'string' ? parsed['msg'] : '',
  };
  for (const [k, v] of Object.entries(parsed)) if (!OWN_FIELDS.has(k)) line[k] = v;
  return line;
}

/**
 * A request's logger: a child of `parent` carrying `req_id` whose lines are
 * also kept for the request-log route. pino writes through the logger's stream
 * symbol (a documented integration point), so the child tees every line it
 * writes; its own children inherit the tee.
 */
export function requestLogger(parent: Logger, reqId: string): Logger {
  const child = parent.child({ req_id: reqId });
  const holder = child as unknown as Record<symbol, unknown>;
  const lines = new RequestLines(holder[STREAM] as PinoStream);
  holder[STREAM] = lines;
  holder[LINES] = lines;
  return child;
}

/** The captured lines of a request logger, if it is one. */
export function capturedLines(log: Logger): RequestLines | undefined {
  return (log as unknown as Record<symbol, RequestLines | undefined>)[LINES];
}
