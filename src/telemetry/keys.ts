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
    /** usage counters of one UTC hour, by dimension tuple */
    usage: (hour: number) => `${base}use:${hour}`,
  };
}

export type TelemetryKeys = ReturnType<typeof telemetryKeys>;

export const HOUR_MS = 3_600_000;
/** the UTC hour number of a time */
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);
