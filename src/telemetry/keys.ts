/**
 * The telemetry keys of one tenant under the deployment's namespace. Every key
 * of a tenant carries the tenant as its hash tag, so in a Redis Cluster they
 * share one slot and one script can touch them together.
 */
export function telemetryKeys(prefix: string, tenantId: string) {
  const base = `${prefix}tel:{${tenantId}}:`;
  return {
    /** the tenant's rows, one stream entry each */
    rows: `${base}rows`,
    /** request_id → stream entry id, for the rows of one UTC hour */
    index: (hour: number) => `${base}idx:${hour}`,
    /** row ids appended in one UTC hour: a re-delivered row is recognised and skipped */
    seen: (hour: number) => `${base}seen:${hour}`,
    /** usage counters of one rollup period (a UTC minute, hour or day, by its number), by dimension tuple */
    usage: (period: RollupPeriod, n: number) => `${base}${ROLLUP_KEY[period]}:${n}`,
    /** usage counters of one hour or day by the values of a projection's dimensions (projections.ts) */
    projection: (period: RollupPeriod, n: number, name: string) => `${base}${ROLLUP_KEY[period]}:${n}:${name}`,
  };
}

export type TelemetryKeys = ReturnType<typeof telemetryKeys>;

/** The periods usage is rolled up by: UTC minutes (short windows), hours (the hour bucket, a window's first part-day), days. */
export type RollupPeriod = 'minute' | 'hour' | 'day';
const ROLLUP_KEY: Readonly<Record<RollupPeriod, string>> = { minute: 'usem', hour: 'use', day: 'used' };

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const PERIOD_MS: Readonly<Record<RollupPeriod, number>> = { minute: MINUTE_MS, hour: HOUR_MS, day: DAY_MS };
/** the UTC hour number of a time */
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);
/** the number of the UTC period holding a time */
export const periodOf = (period: RollupPeriod, ms: number): number => Math.floor(ms / PERIOD_MS[period]);
