import type { DestinationStream } from 'pino';
import type { ResponseMeta } from '../http/types.js';
import { isoTime } from './iso-time.js';

/** One answered request, as the access line records it. */
export interface AccessRecord {
  req_id: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  /** tenant, provider, model, and for a relayed call its key, upstream status, tokens, cost and overhead (set by accounting) */
  meta: ResponseMeta;
  aborted: boolean;
}

const str = (v: string | undefined): string => (v === undefined ? 'null' : JSON.stringify(v));
const num = (v: number | undefined): string => (v === undefined ? 'null' : String(v));

/** Lines are handed to the destination in batches of about this many lines, and at least every FLUSH_MS. */
const BATCH_LINES = 64;
const FLUSH_MS = 250;

/**
 * The access line, written straight to the log destination in pino's line
 * format (level 30 = info). It carries only values the gateway sets itself,
 * so it needs no redaction pass; building it by hand instead of through a
 * logger call was a fifth of a request's CPU. Lines are handed over in
 * batches (a destination write per line cost as much again); a batch waits
 * at most FLUSH_MS. A line is formatted when its batch goes out, never in
 * the turn that answered: a stream's accounting (key, tokens, cost) lands
 * just after its last byte, and the line must carry it.
 */
export class AccessLog {
  private readonly prefix: string;
  private pending: Array<{ at: string; r: AccessRecord }> = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;

  constructor(
    private readonly destination: DestinationStream,
    readonly enabled: boolean,
  ) {
    this.prefix = `{"level":30,"pid":${process.pid},"time":`;
  }

  write(r: AccessRecord): void {
    if (!this.enabled) return;
    this.pending.push({ at: isoTime(Date.now()), r });
    if (this.pending.length >= BATCH_LINES) this.immediate ??= setImmediate(() => this.flush());
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  /** hands what is batched to the destination */
  flush(): void {
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    if (this.pending.length === 0) return;
    let batch = '';
    for (const { at, r } of this.pending.splice(0)) batch += this.line(at, r);
    this.destination.write(batch);
  }

  private line(at: string, r: AccessRecord): string {
    const m = r.meta;
    return (
      `${this.prefix}"${at}","req_id":${str(r.req_id)},"method":${str(r.method)},"path":${str(r.path)},"status":${r.status},"ms":${r.ms},` +
      `"tenant":${str(m.tenant)},"key_id":${str(m.keyId)},"provider":${str(m.provider)},"model":${str(m.model)},"upstream_status":${num(m.upstreamStatus)},` +
      `"tokens_in":${num(m.tokensIn)},"tokens_out":${num(m.tokensOut)},"cost_usd":${num(m.costUsd)},"overhead_ms":${num(m.overheadMs)}` +
      `${r.aborted ? ',"aborted":true' : ''},"msg":"request"}\n`
    );
  }
}
