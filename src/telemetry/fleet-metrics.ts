import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';

const ASK = 'gw:metrics?';
const ANSWER = 'gw:metrics';
/** a replica that does not answer in this long is left out of the scrape */
const REPLICA_TIMEOUT_MS = 2000;

type Snapshot = Array<MetricObjectWithValues<MetricValue<string>>>;
interface Answer {
  type: typeof ANSWER;
  id: string;
  metrics: Snapshot;
}

/**
 * Replica side: answers the primary's scrape requests over the fork IPC
 * channel with this process's metrics as JSON.
 */
export function answerFleetScrapes(registry: Registry): void {
  process.on('message', (message: unknown) => {
    const m = message as { type?: string; id?: string };
    if (m?.type !== ASK || typeof m.id !== 'string') return;
    const id = m.id;
    registry.getMetricsAsJSON().then(
      // the callback takes a closed channel's error instead of an 'error' event on process
      (metrics) => process.send?.({ type: ANSWER, id, metrics } satisfies Answer, undefined, {}, () => undefined),
      () => undefined, // the primary leaves this replica out of the scrape after its timeout
    );
  });
}

/**
 * Primary side: one scrape of the whole host. Every replica is asked for its
 * metrics and the answers are aggregated (counters and histograms summed,
 * gauges by each metric's own aggregator), so a scrape never lands on one
 * random replica's slice.
 */
export class FleetMetrics {
  readonly contentType = AggregatorRegistry.PROMETHEUS_CONTENT_TYPE;

  constructor(private readonly replicas: () => Iterable<ChildProcess>) {}

  async metrics(): Promise<string> {
    const snapshots = await Promise.all([...this.replicas()].map((child) => ask(child)));
    const answered = snapshots.filter((s): s is Snapshot => s !== undefined);
    return AggregatorRegistry.aggregate(answered).metrics();
  }
}

function ask(child: ChildProcess): Promise<Snapshot | undefined> {
  if (!child.connected) return Promise.resolve(undefined);
  const id = randomUUID();
  return new Promise((resolve) => {
    const done = (snapshot: Snapshot | undefined) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(snapshot);
    };
    const onMessage = (message: unknown) => {
      const m = message as Partial<Answer>;
      if (m?.type === ANSWER && m.id === id) done(m.metrics);
    };
    const timer = setTimeout(() => done(undefined), REPLICA_TIMEOUT_MS);
    child.on('message', onMessage);
    child.send({ type: ASK, id }, (err) => {
      if (err) done(undefined);
    });
  });
}
