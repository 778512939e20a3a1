import { randomUUID } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RelayPlan } from '../pipeline/index.js';
import { ADMITTED, type Admission, type PolicyStage } from '../pipeline/policy.js';
import { costUsd, lookupModel } from '../providers/catalog.js';
import type { MeterBucket, MeterStore } from '../stores/meter.js';
import type { DocStore } from '../stores/types.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';

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

const OUTPUT_LIMIT_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens', 'maxTokens', 'maxOutputTokens'].map((f) => Buffer.from(`"${f}"`));

/**
 * The largest output limit the body names under any surface's field name, or
 * undefined. Scans bytes natively (Buffer.indexOf) instead of parsing the
 * JSON: a quoted name followed by `:` is always a key in valid JSON, and when a
 * nested object repeats a name the largest value wins, which only over-reserves.
 */
export function requestedOutputTokens(body: Buffer): number | undefined {
  let best: number | undefined;
  for (const field of OUTPUT_LIMIT_FIELDS) {
    for (let at = body.indexOf(field); at !== -1; at = body.indexOf(field, at + field.length)) {
      let i = at + field.length;
      while (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09) i++;
      if (body[i++] !== 0x3a) continue;
      while (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09) i++;
      let n = 0;
      let digits = 0;
      for (let c = body[i]; c !== undefined && c >= 0x30 && c <= 0x39 && digits < 10; c = body[++i]) {
        n = n * 10 + c - 0x30;
        digits++;
      }
      if (digits > 0 && (best === undefined || n > best)) best = n;
    }
  }
  return best;
}

/**
 * Worst-case cost of a call at catalog prices: every body byte counted as a
 * third of a prompt token (text runs about four bytes per token, CJK about
 * three, and JSON punctuation only adds bytes), plus the requested output
 * limit, or the model's own limit when none is asked. A model the catalog
 * does not know costs 0, as it does in accounting.
 */
export function worstCaseUsd(model: string | undefined, body: Buffer): number {
  const entry = lookupModel(model);
  if (!entry) return 0;
  const asked = requestedOutputTokens(body);
  const output = asked === undefined ? entry.max_output_tokens : Math.min(asked, entry.max_output_tokens || asked);
  return costUsd(model, { input_tokens: Math.ceil(body.length / 3), output_tokens: output, cached_tokens: 0 });
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

  constructor(private readonly opts: SpendCapOptions) {
    this.clock = opts.clock ?? Date.now;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
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
    const amount = worstCaseUsd(plan.model, plan.body);
    let result;
    try {
      result = await this.opts.meter.reserve({ bucket, id, amount, cap: cap.cap_usd, leaseMs: this.leaseMs, keepUntil: period.end + KEEP_AFTER_END_MS });
    } catch (err) {
      // SPEC Fail-open 1: our own metering never refuses a call
      this.opts.metrics.spendCapStoreFailures.inc({ op: 'reserve' });
      this.opts.log.warn({ err: String(err), org_id: orgId }, 'spend cap: metering store unreachable; relaying unmetered');
      return ADMITTED;
    }
    if (!result.admitted) throw this.exhausted(cap, result.settled, result.reserved, amount, period.end);
    this.track(bucket, id);
    return {
      settle: (cost) => {
        this.untrack(bucket, id);
        this.opts.meter.settle(bucket, id, cost).catch((err: unknown) => {
          this.opts.metrics.spendCapStoreFailures.inc({ op: 'settle' });
          this.opts.log.warn({ err: String(err), org_id: orgId, cost_usd: cost }, 'spend cap: settlement lost; the reservation lapses with its lease');
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
