import type { GatewayRequest } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { RelayPlan } from './index.js';

/**
 * What the tenant's own policy decided before a call goes upstream (model
 * access, rate limit, spend-cap reservation, residency). `settle` runs once
 * the reply has ended, with the real cost.
 */
export interface Admission {
  settle(costUsd: number): void;
}

/** A policy stage: throws a GatewayError to refuse, or admits. */
export interface PolicyStage {
  readonly name: string;
  admit(req: GatewayRequest, plan: RelayPlan): Promise<Admission> | Admission;
  /** re-checks once the upstream location is resolved (a stored key's region): throws to refuse */
  located?(plan: RelayPlan, location: Location): void;
}

export const ADMITTED: Admission = { settle: () => undefined };

/** Runs the stages in order; a refusal releases what earlier stages reserved. */
export async function admitAll(stages: readonly PolicyStage[], req: GatewayRequest, plan: RelayPlan): Promise<Admission> {
  if (stages.length === 0) return ADMITTED;
  const admitted: Admission[] = [];
  try {
    for (const stage of stages) {
      req.stages.begin(`policy_${stage.name}`);
      admitted.push(await stage.admit(req, plan));
    }
  } catch (err) {
    for (const a of admitted) a.settle(0);
    throw err;
  } finally {
    req.stages.end();
  }
  return { settle: (cost) => admitted.forEach((a) => a.settle(cost)) };
}
