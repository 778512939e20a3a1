import type { ResponseMeta } from '../http/types.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { InspectorRing } from './ring.js';
import { RetryDetector } from './retry.js';
import { buildRecord, type FinishedRequest, type RequestRow, type StoredArms } from './row.js';
import type { StreamWriter } from './stream-writer.js';

/** Where accounting hands every finished request. */
export interface RowSink {
  /** `answer` is the meta the access line reads: the row's key, usage and cost are added to it */
  finished(request: FinishedRequest, answer?: ResponseMeta): void;
}

export interface TelemetryRowsOptions {
  /** the arms of skills the engine did not report, by the key's stored modes */
  storedArms?: StoredArms;
  /** also handed every row (the process's scorecard window, without a durable store) */
  onRow?: (row: RequestRow) => void;
}

/**
 * The telemetry fan-out: one finished request becomes one row and decision
 * record, kept in the process's ring, queued for the Redis streams (when
 * configured), counted in the metrics and handed to `onRow`. Nothing here waits; a fault in it
 * is logged and never reaches the request.
 */
export class TelemetryRows implements RowSink {
  private readonly retries = new RetryDetector();

  constructor(
    private readonly ring: InspectorRing,
    private readonly writer: StreamWriter | undefined,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly opts: TelemetryRowsOptions = {},
  ) {}

  finished(f: FinishedRequest, answer?: ResponseMeta): void {
    try {
      const now = Date.now();
      const { row, decision, preview } = buildRecord(f, this.retries.isRetry(f.keyId, f.requestId, f.headers, f.bodyHash, now), now, this.opts.storedArms);
      this.ring.push({ row, decision, preview, lines: f.lines });
      this.writer?.append(row, decision);
      this.metrics.recordRow(row, f.ttfbMs, decision.skills);
      this.opts.onRow?.(row);
      if (answer) {
        answer.keyId = row.key_id;
        // a refusal never went upstream
        if (f.refusal === undefined) answer.upstreamStatus = f.status;
        answer.tokensIn = row.tokens_in;
        answer.tokensOut = row.tokens_out;
        answer.costUsd = row.cost_usd;
        answer.overheadMs = row.overhead_ms ?? undefined;
      }
    } catch (err) {
      this.log.warn({ err, req_id: f.requestId }, 'telemetry row not recorded');
    }
  }
}
