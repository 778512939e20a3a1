import type { Registry } from 'prom-client';

/**
 * Counters and histograms for the per-request path. prom-client validates and
 * hashes the label set on every observation, even through a label child,
 * which was a twentieth of a small request's CPU. These keep one series
 * object per label values, so an observation is a few additions, and expose
 * the same `get()` shape prom-client's registry formats and its
 * AggregatorRegistry sums across replicas.
 */
interface Series {
  labels: Record<string, string>;
  sum: number;
  count: number;
  /** per-bucket (not cumulative) counts; histograms only */
  buckets: Float64Array | undefined;
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

abstract class HotMetric {
  protected readonly series = new Map<string, Series>();
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bucketCount: number,
    registry: Registry,
  ) {
    // the registry takes any object with name, help, type and get()
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  abstract readonly type: 'counter' | 'histogram';

  protected seriesFor(values: readonly string[]): Series {
    const key = values.length === 1 ? (values[0] as string) : values.join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
      s = { labels, sum: 0, count: 0, buckets: this.bucketCount > 0 ? new Float64Array(this.bucketCount) : undefined };
      this.series.set(key, s);
    }
    return s;
  }

  reset(): void {
    this.series.clear();
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() };
  }

  protected abstract values(): MetricValue[];
}

export class HotCounter extends HotMetric {
  readonly type = 'counter';

  constructor(name: string, help: string, labelNames: readonly string[], registry: Registry) {
    super(name, help, labelNames, 0, registry);
  }

  inc(values: readonly string[], by = 1): void {
    this.seriesFor(values).sum += by;
  }

  protected values(): MetricValue[] {
    return [...this.series.values()].map((s) => ({ labels: s.labels, value: s.sum }));
  }
}

export class HotHistogram extends HotMetric {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, bounds.length, registry);
  }

  observe(values: readonly string[], value: number): void {
    const s = this.seriesFor(values);
    s.sum += value;
    s.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        (s.buckets as Float64Array)[i] = ((s.buckets as Float64Array)[i] as number) + 1;
        break;
      }
    }
  }

  protected values(): MetricValue[] {
    const out: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += (s.buckets as Float64Array)[i] as number;
        out.push({ labels: { ...s.labels, le }, value: acc, metricName: bucket });
      });
      out.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: bucket });
      out.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      out.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return out;
  }
}
