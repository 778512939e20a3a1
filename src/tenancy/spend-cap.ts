import { randomUUID } from 'node:crypto';
import { GatewayError } from '../errors.js';
import { costUsd, lookupModel, priciestModel } from '../providers/catalog.js';
import { adapterOf } from '../providers/index.js';
import type { ProviderId } from '../providers/types.js';
import { LATE, within } from '../stores/bounded-wait.js';
import type { CapPeriod, MeterAccount, MeterStore, ReserveResult } from '../stores/meter.js';
import type { DocStore } from '../stores/types.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { throttledWarn } from '../telemetry/throttled-log.js';

export type { CapPeriod } from '../stores/meter.js';

/** The cap as stored in the `org_policy` collection under `spend_cap:<org_id>`. */
export interface SpendCapConfig {
  cap_usd: number;
  period: CapPeriod;
  updated_at: string;
}

/** The `spend_cap` object of the spend-cap and settings routes. */
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
  /** a reservation not renewed for this long lapses (its replica is gone) */
  leaseMs?: number;
}

const DEFAULT_LEASE_MS = 60_000;
/**
 * The longest a call waits for its reservation. Past it the call is relayed
 * unmetered (fail-open, counted); a reservation that lands later still
 * carries the call's cost when it settles.
 */
export const RESERVE_WAIT_MS = 250;
/** after a reservation came late, calls do not wait on the store at all for this long (one call per period pays the wait) */
const SLOW_STORE_MS = 1000;

/** USD to 9 decimals (a nano-dollar): no float noise in bodies, no exponent notation in headers */
const roundUsd = (x: number): number => Math.round(x * 1e9) / 1e9;
const usdText = (x: number): string => roundUsd(x).toFixed(9).replace(/\.?0+$/, '');

/** What a reservation is taken on: the body that goes upstream. */
export interface MeteredCall {
  orgId: string;
  provider: ProviderId;
  model: string | undefined;
  body: Buffer;
}

/** A reservation held until the call's real cost is known (undefined: billed, usage unseen: kept whole). */
export interface Reservation {
  settle(costUsd: number | undefined): void;
  /** the worst case reserved (USD) */
  readonly reservedUsd: number;
}

export const capDocId = (orgId: string): string => `spend_cap:${orgId}`;

/** the metering account of an org's cap: one per period kind, so changing the kind starts another count */
const accountOf = (orgId: string, period: CapPeriod): MeterAccount => `${orgId}:${period}`;

/**
 * An upper bound of a call's cost at catalog prices, reserved before it is sent:
 * - prompt: one token per body byte, at most the model's context window. The
 *   tokenizers in use (byte-level BPE, SentencePiece with byte fallback) never
 *   make a token of less than one byte, and no call reads past its window, so
 *   neither dense text (base64, CJK) nor a large image can exceed it.
 *   Priced as a prompt-cache write where that costs more than plain input.
 * - output: the limit the body sets where its provider's format sets it, times the
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
  const { maxTokens: asked, choices } = adapterOf(provider).requestedOutput(doc);
  const perChoice = asked === undefined ? entry.max_output_tokens : Math.min(asked, entry.max_output_tokens || asked);
  const input = Math.min(body.length, entry.context_window);
  // a prompt written to the vendor's cache may cost more than plain input (Anthropic: 1.25×)
  const written = entry.price.cache_write > entry.price.input ? input : 0;
  return costUsd(entry.id, { input_tokens: input, output_tokens: Math.ceil(perChoice * choices), cached_tokens: 0, cache_write_tokens: written }, provider);
}

/**
 * Real-time spend caps. The cap is configuration (DocStore, mirrored in every
 * replica, so an uncapped org costs no store call); consumption and in-flight
 * reservations live in the metering store shared by every replica, whose clock
 * alone decides the period (its id, its reset time, when its record expires).
 */
export class SpendCaps {
  private readonly leaseMs: number;
  /** reservations in flight on this replica, renewed so they outlive slow streams but not a crash */
  private readonly inFlight = new Map<MeterAccount, Set<string>>();
  private renewTimer: NodeJS.Timeout | undefined;
  /** the metering store answered late: until then reservations are not waited for */
  private slowUntil = 0;
  // per-request warnings while the metering store is away: one line per interval, with a count
  private readonly warnUnmetered: (obj: object) => void;
  private readonly warnSettlementLost: (obj: object) => void;

  constructor(private readonly opts: SpendCapOptions) {
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
    let figures;
    try {
      figures = await this.opts.meter.figures(accountOf(orgId, cap.period), cap.period);
    } catch (err) {
      this.opts.metrics.spendCapStoreFailures.inc({ op: 'read' });
      throw new GatewayError('store_timeout', 'the metering store did not answer', { cause: err });
    }
    return { cap_usd: cap.cap_usd, period: cap.period, consumed_usd: roundUsd(figures.settled), resets_at: new Date(figures.resetsAt).toISOString() };
  }

  /** Sets (or with null removes) the cap; an omitted period keeps the current one, else `month`. */
  async setCap(orgId: string, capUsd: number | null, period?: CapPeriod): Promise<SpendCapStatus | null> {
    if (capUsd === null) {
      await this.opts.docs.delete('org_policy', capDocId(orgId));
      return null;
    }
    const doc: SpendCapConfig = { cap_usd: capUsd, period: period ?? this.config(orgId)?.period ?? 'month', updated_at: new Date().toISOString() };
    await this.opts.docs.put('org_policy', capDocId(orgId), doc);
    return this.status(orgId);
  }

  close(): void {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  /**
   * Reserves a call's worst case against its org's cap (metering, src/policy/spend-cap.ts);
   * an uncapped org is admitted at once, with no store call (undefined).
   */
  admit(call: MeteredCall): Promise<Reservation | undefined> | undefined {
    const cap = this.config(call.orgId);
    return cap && this.reserve(call, cap);
  }

  private async reserve(call: MeteredCall, cap: SpendCapConfig): Promise<Reservation | undefined> {
    const orgId = call.orgId;
    const account = accountOf(orgId, cap.period);
    const id = randomUUID();
    const amount = worstCaseUsd(call.model, call.body, call.provider);
    const reserving = this.opts.meter.reserve({ account, kind: cap.period, id, amount, cap: cap.cap_usd, leaseMs: this.leaseMs });
    // within a second of a reservation that came late no call waits; only one that waited and found the store slow starts that second
    const waits = Date.now() >= this.slowUntil;
    let result;
    try {
      result = waits ? await within(reserving, RESERVE_WAIT_MS) : LATE;
    } catch (err) {
      // fail-open: our own metering never turns a call into an error
      this.opts.metrics.spendCapStoreFailures.inc({ op: 'reserve' });
      this.warnUnmetered({ err: String(err), org_id: orgId });
      return undefined;
    }
    if (result === LATE) {
      if (waits) this.slowUntil = Date.now() + SLOW_STORE_MS;
      return this.lateReservation(reserving, account, id, amount, orgId);
    }
    if (!result.admitted) throw this.exhausted(cap, result.settled, result.reserved, amount, result.resetsAt);
    const { period } = result;
    this.track(account, id);
    return {
      reservedUsd: amount,
      // an unknown cost (billed, usage unseen) keeps the whole reservation
      settle: (cost) => {
        this.untrack(account, id);
        this.settleOn(account, period, id, cost ?? amount, orgId);
      },
    };
  }

  private settleOn(account: MeterAccount, period: string, id: string, cost: number, orgId: string): void {
    this.opts.meter.settle(account, period, id, cost).catch((err: unknown) => {
      this.opts.metrics.spendCapStoreFailures.inc({ op: 'settle' });
      this.warnSettlementLost({ err: String(err), org_id: orgId, cost_usd: cost });
    });
  }

  /**
   * The store is slow: the call goes on unmetered now (counted, warned), and
   * if the reservation lands after all, the call's cost is settled on it, so
   * a slow store loses nothing a down one would not.
   */
  private lateReservation(reserving: Promise<ReserveResult>, account: MeterAccount, id: string, amount: number, orgId: string): Reservation {
    this.opts.metrics.spendCapStoreFailures.inc({ op: 'reserve_slow' });
    this.warnUnmetered({ org_id: orgId, waited_ms: RESERVE_WAIT_MS });
    let settled = false;
    const landed = reserving.then(
      (r) => {
        if (!r.admitted) return undefined;
        // landed while its call runs: renewed with the others, so a call longer than the lease keeps its worst case counted
        if (!settled) this.track(account, id);
        return r.period;
      },
      () => undefined,
    );
    return {
      reservedUsd: amount,
      settle: (cost) => {
        settled = true;
        void landed.then((period) => {
          if (period === undefined) return;
          this.untrack(account, id);
          this.settleOn(account, period, id, cost ?? amount, orgId);
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

  private track(account: MeterAccount, id: string): void {
    let ids = this.inFlight.get(account);
    if (!ids) this.inFlight.set(account, (ids = new Set()));
    ids.add(id);
    if (!this.renewTimer) {
      this.renewTimer = setInterval(() => this.renewAll(), Math.max(10, Math.floor(this.leaseMs / 3)));
      this.renewTimer.unref();
    }
  }

  private untrack(account: MeterAccount, id: string): void {
    const ids = this.inFlight.get(account);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) this.inFlight.delete(account);
  }

  private renewAll(): void {
    for (const [account, ids] of this.inFlight) {
      this.opts.meter.renew(account, [...ids], this.leaseMs).catch(() => this.opts.metrics.spendCapStoreFailures.inc({ op: 'renew' }));
    }
  }
}
