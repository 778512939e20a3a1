import { randomUUID } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RelayPlan } from '../pipeline/index.js';
import { ADMITTED, type Admission, type PolicyStage } from '../pipeline/policy.js';
import { costUsd, lookupModel, priciestModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import type { MeterBucket, MeterStore } from '../stores/meter.js';
import type { DocStore } from '../stores/types.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { throttledWarn } from '../telemetry/throttled-log.js';

export type CapPeriod = 'day' | 'month';

/** The cap as stored in the `org_policy` collection under `spend_cap:<org_id>`. */
export interface SpendCapConfig {
  cap_usd: number;
  period: CapPeriod;
  updated_at: string;
}

/** CONTRACT §6 `spend_cap`; also the settings route's figure. */
export interface SpendCapStatus {
  cap_usd: number;
  period: CapPeriod;
  consumed_usd: number;
  resets_at: string;
}

export interface SpendCapOptions {
  docs: DocStore;
  meter: MeterStore;
  metrics: Metrics;
  log: Logger;
  /** epoch ms; tests move it across a period boundary */
  clock?: () => number;
  /** a reservation not renewed for this long lapses (its replica is gone) */
  leaseMs?: number;
}

const DEFAULT_LEASE_MS = 60_000;
/** finished periods stay readable this long past their end */
const KEEP_AFTER_END_MS = 86_400_000;

/** USD to 9 decimals (a nano-dollar): no float noise in bodies, no exponent notation in headers */
const roundUsd = (x: number): number => Math.round(x * 1e9) / 1e9;
const usdText = (x: number): string => roundUsd(x).toFixed(9).replace(/\.?0+$/, '');

export const capDocId = (orgId: string): string => `spend_cap:${orgId}`;

/** The UTC day or calendar month holding `now`. */
export function periodOf(now: number, period: CapPeriod): { id: string; start: number; end: number } {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === 'day') {
    const start = Date.UTC(y, m, d.getUTCDate());
    return { id: new Date(start).toISOString().slice(0, 10), start, end: start + 86_400_000 };
  }
  const start = Date.UTC(y, m, 1);
  return { id: new Date(start).toISOString().slice(0, 7), start, end: Date.UTC(y, m + 1, 1) };
}

/** Where each surface's body names its output limit and how many choices it asks for. */
const OUTPUT_LIMIT_PATHS = [['max_tokens'], ['max_completion_tokens'], ['max_output_tokens'], ['generationConfig', 'maxOutputTokens'], ['inferenceConfig', 'maxTokens']];
const CHOICE_PATHS = [['n'], ['generationConfig', 'candidateCount']];

function numberAt(doc: unknown, path: readonly string[]): number | undefined {
  let v: unknown = doc;
  for (const k of path) v = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** the largest value any of `paths` names in the parsed body */
const largestAt = (doc: unknown, paths: readonly string[][]): number | undefined =>
  paths.reduce<number | undefined>((best, p) => {
    const v = numberAt(doc, p);
    return v !== undefined && (best === undefined || v > best) ? v : best;
  }, undefined);

/**
 * An upper bound of a call's cost at catalog prices, reserved before it is sent:
 * - prompt: one token per body byte, at most the model's context window. The
 *   tokenizers in use (byte-level BPE, SentencePiece with byte fallback) never
 *   make a token of less than one byte, and no call reads past its window, so
 *   neither dense text (base64, CJK) nor a large image can exceed it.
 * - output: the limit the body sets where its surface sets it, times the
 *   choices it asks for (`n`, `candidateCount`), at most the model's own
 *   limit; the model's own limit when the body sets none.
 * - a model the catalog does not know (an Azure deployment name) is priced as
 *   the priciest model its provider serves; the call settles to its real cost
 *   once the reply names the model that served it.
 * Only capped tenants pay for the parse.
 */
export function worstCaseUsd(model: string | undefined, body: Buffer, provider: ProviderId): number {
  const entry = lookupModel(model) ?? priciestModel(provider);
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    doc = undefined;
  }
  const asked = largestAt(doc, OUTPUT_LIMIT_PATHS);
  const choices = largestAt(doc, CHOICE_PATHS) ?? 1;
  const perChoice = asked === undefined ? entry.max_output_tokens : Math.min(asked, entry.max_output_tokens || asked);
  const input = Math.min(body.length, entry.context_window);
  return costUsd(entry.id, { input_tokens: input, output_tokens: Math.ceil(perChoice * choices), cached_tokens: 0 });
}

/**
 * Real-time spend caps. The cap is configuration (DocStore, mirrored in every
 * replica, so an uncapped org costs no store call); consumption and in-flight
 * reservations live in the metering store shared by every replica.
 */
export class SpendCaps {
  private readonly clock: () => number;
  private readonly leaseMs: number;
  /** reservations in flight on this replica, renewed so they outlive slow streams but not a crash */
  private readonly inFlight = new Map<MeterBucket, Set<string>>();
  private renewTimer: NodeJS.Timeout | undefined;
  // per-request warnings while the metering store is away: one line per interval, with a count
  private readonly warnUnmetered: (obj: object) => void;
  private readonly warnSettlementLost: (obj: object) => void;

  constructor(private readonly opts: SpendCapOptions) {
    this.clock = opts.clock ?? Date.now;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.warnUnmetered = throttledWarn(opts.log, 'spend cap: metering store unreachable; relaying unmetered');
    this.warnSettlementLost = throttledWarn(opts.log, 'spend cap: settlement lost; the reservation lapses with its lease');
  }

  config(orgId: string): SpendCapConfig | undefined {
    return this.opts.docs.get<SpendCapConfig>('org_policy', capDocId(orgId));
  }

  /** The org's cap with this period's consumption, or null when it has none. */
  async status(orgId: string): Promise<SpendCapStatus | null> {
    const cap = this.config(orgId);
    if (!cap) return null;
    const period = periodOf(this.clock(), cap.period);
    let settled: number;
    try {
      settled = (await this.opts.meter.figures(this.bucket(orgId, cap.period, period.id))).settled;
    } catch (err) {
      this.opts.metrics.spendCapStoreFailures.inc({ op: 'read' });
      throw new GatewayError('store_timeout', 'the metering store did not answer', { cause: err });
    }
    return { cap_usd: cap.cap_usd, period: cap.period, consumed_usd: roundUsd(settled), resets_at: new Date(period.end).toISOString() };
  }

  /** Sets (or with null removes) the cap; an omitted period keeps the current one, else `month`. */
  async setCap(orgId: string, capUsd: number | null, period?: CapPeriod): Promise<SpendCapStatus | null> {
    if (capUsd === null) {
      await this.opts.docs.delete('org_policy', capDocId(orgId));
      return null;
    }
    const doc: SpendCapConfig = { cap_usd: capUsd, period: period ?? this.config(orgId)?.period ?? 'month', updated_at: new Date(this.clock()).toISOString() };
    await this.opts.docs.put('org_policy', capDocId(orgId), doc);
    return this.status(orgId);
  }

  /** The policy stage reserving each capped call's worst case before it goes upstream. */
  stage(): PolicyStage {
    return { name: 'spend_cap', admit: (_req: GatewayRequest, plan: RelayPlan) => this.admit(plan) };
  }

  close(): void {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  private bucket(orgId: string, period: CapPeriod, id: string): MeterBucket {
    return `${orgId}:${period}:${id}`;
  }

  /** uncapped tenants and costless calls are admitted at once, with no store call */
  private admit(plan: RelayPlan): Admission | Promise<Admission> {
    const cap = this.config(plan.caller.org.org_id);
    if (!cap || plan.costless) return ADMITTED;
    return this.reserve(plan, cap);
  }

  private async reserve(plan: RelayPlan, cap: SpendCapConfig): Promise<Admission> {
    const orgId = plan.caller.org.org_id;
    const period = periodOf(this.clock(), cap.period);
    const bucket = this.bucket(orgId, cap.period, period.id);
    const id = randomUUID();
    const amount = worstCaseUsd(plan.model, plan.body, plan.provider);
    let result;
    try {
      result = await this.opts.meter.reserve({ bucket, id, amount, cap: cap.cap_usd, leaseMs: this.leaseMs, keepUntil: period.end + KEEP_AFTER_END_MS });
    } catch (err) {
      // SPEC Fail-open 1: our own metering never refuses a call
      this.opts.metrics.spendCapStoreFailures.inc({ op: 'reserve' });
      this.warnUnmetered({ err: String(err), org_id: orgId });
      return ADMITTED;
    }
    if (!result.admitted) throw this.exhausted(cap, result.settled, result.reserved, amount, period.end);
    this.track(bucket, id);
    return {
      // an unknown cost (billed, usage unseen) keeps the whole reservation
      settle: (cost) => {
        this.untrack(bucket, id);
        this.opts.meter.settle(bucket, id, cost ?? amount).catch((err: unknown) => {
          this.opts.metrics.spendCapStoreFailures.inc({ op: 'settle' });
          this.warnSettlementLost({ err: String(err), org_id: orgId, cost_usd: cost });
        });
      },
    };
  }

  private exhausted(cap: SpendCapConfig, settled: number, reserved: number, needed: number, end: number): GatewayError {
    const resetsAt = new Date(end).toISOString();
    return new GatewayError('budget_exhausted', `spend cap of ${cap.cap_usd} USD per ${cap.period} would be exceeded; resets at ${resetsAt}`, {
      fields: { cap_usd: cap.cap_usd, period: cap.period, consumed_usd: roundUsd(settled), reserved_usd: roundUsd(reserved), request_reserve_usd: roundUsd(needed), resets_at: resetsAt },
      headers: [
        ['x-gw-budget-cap-usd', usdText(cap.cap_usd)],
        ['x-gw-budget-consumed-usd', usdText(settled)],
        ['x-gw-budget-resets-at', resetsAt],
      ],
    });
  }

  private track(bucket: MeterBucket, id: string): void {
    let ids = this.inFlight.get(bucket);
    if (!ids) this.inFlight.set(bucket, (ids = new Set()));
    ids.add(id);
    if (!this.renewTimer) {
      this.renewTimer = setInterval(() => this.renewAll(), Math.max(10, Math.floor(this.leaseMs / 3)));
      this.renewTimer.unref();
    }
  }

  private untrack(bucket: MeterBucket, id: string): void {
    const ids = this.inFlight.get(bucket);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) this.inFlight.delete(bucket);
  }

  private renewAll(): void {
    for (const [bucket, ids] of this.inFlight) {
      this.opts.meter.renew(bucket, [...ids], this.leaseMs).catch(() => this.opts.metrics.spendCapStoreFailures.inc({ op: 'renew' }));
    }
  }
}
