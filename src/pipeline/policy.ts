import type { GatewayRequest } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { RelayPlan } from './index.js';

/**
 * What the tenant's own policy decided before a call goes upstream (model
 * access, rate limit, spend-cap reservation, residency). `settle` runs once
 * the reply has ended, with the real cost, or undefined when the vendor billed
 * a call whose usage the gateway never saw (a reservation is then kept whole).
 */
export interface Admission {
  settle(costUsd: number | undefined): void;
}

/** A policy stage: throws a GatewayError to refuse, or admits. */
export interface PolicyStage {
  readonly name: string;
  admit(req: GatewayRequest, plan: RelayPlan): Promise<Admission> | Admission;
  /** re-checks once the upstream location is resolved (a stored key's region): throws to refuse */
  located?(plan: RelayPlan, location: Location): void;
}

export const ADMITTED: Admission = { settle: () => undefined };

/**
 * Runs the stages in order; a refusal releases what earlier stages reserved.
 * Answers synchronously while every stage does (the common case: no cap to
 * reserve against), so an admitted request waits on no promise it need not.
 */
export function admitAll(stages: readonly PolicyStage[], req: GatewayRequest, plan: RelayPlan): Admission | Promise<Admission> {
  const admitted: Admission[] = [];
  for (let i = 0; i < stages.length; i++) {
    const stage = stages[i] as PolicyStage;
    req.stages.begin(`policy_${stage.name}`);
    let out: Admission | Promise<Admission>;
    try {
      out = stage.admit(req, plan);
    } catch (err) {
      release(admitted, req);
      throw err;
    }
    if (out instanceof Promise) return admitRest(stages, i, out, admitted, req, plan);
    if (out !== ADMITTED) admitted.push(out);
  }
  req.stages.end();
  return combine(admitted);
}

/** the rest of admitAll once a stage has to wait */
async function admitRest(stages: readonly PolicyStage[], at: number, pending: Promise<Admission>, admitted: Admission[], req: GatewayRequest, plan: RelayPlan): Promise<Admission> {
  try {
    let out = await pending;
    if (out !== ADMITTED) admitted.push(out);
    for (let i = at + 1; i < stages.length; i++) {
      const stage = stages[i] as PolicyStage;
      req.stages.begin(`policy_${stage.name}`);
      out = await stage.admit(req, plan);
      if (out !== ADMITTED) admitted.push(out);
    }
  } catch (err) {
    release(admitted, req);
    throw err;
  }
  req.stages.end();
  return combine(admitted);
}

function release(admitted: Admission[], req: GatewayRequest): void {
  for (const a of admitted) a.settle(0);
  req.stages.end();
}

function combine(admitted: Admission[]): Admission {
  if (admitted.length === 0) return ADMITTED;
  if (admitted.length === 1) return admitted[0] as Admission;
  return { settle: (cost) => admitted.forEach((a) => a.settle(cost)) };
}
