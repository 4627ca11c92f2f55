/**
 * http_requests_total and http_request_duration_seconds, counted per request at the cost of a map
 * lookup and a few additions, and turned into prom-client's samples only when scraped.
 *
 * Why not prom-client's Counter and Histogram: their `inc` and `observe` check the label names and
 * hash the label object on every call (a labelled child too), a measurable share of the
 * JavaScript time of a GET balance answered from the cache (CPU profile; BENCHMARKS.md, "GET
 * balance"). The text a scrape gives is the same: both register in the app's prom-client
 * registry as metrics of their type, and the registry formats the samples `get()` returns as it
 * formats its own metrics'.
 */
import type { Registry } from 'prom-client';

type Labels = { method: string; route: string; status: string };

/** One (method, route pattern, status): its count, the sum of its durations and its buckets. */
interface Series {
  labels: Labels;
  count: number;
  sum: number;
  /** Per upper bound, the observations at or below it and above the one before (not cumulative). */
  buckets: Float64Array;
}

interface Sample {
  labels: Record<string, string | number>;
  /** The series' labels, written after `labels` (prom-client's order: `le` first). */
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
}

export class RequestMetrics {
  private readonly series = new Map<string, Series>();

  constructor(
    registry: Registry,
    private readonly bounds: readonly number[],
  ) {
    registry.registerMetric(
      this.metric('http_requests_total', 'HTTP requests answered by this process, by method, route and status.', 'counter', () =>
        this.counts(),
      ) as never,
    );
    registry.registerMetric(
      this.metric('http_request_duration_seconds', 'Time to answer an HTTP request, by method, route and status.', 'histogram', () =>
        this.histogram(),
      ) as never,
    );
  }

  /**
   * Called once per answered request. Bounded: routes are patterns ('unmatched' for the rest),
   * methods those Node's parser takes, statuses a few.
   */
  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: new Float64Array(this.bounds.length) };
      this.series.set(key, s);
    }
    s.count += 1;
    s.sum += seconds;
    const i = this.bounds.findIndex((b) => seconds <= b);
    if (i >= 0) s.buckets[i]! += 1;
  }

  private counts(): Sample[] {
    return [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.count }));
  }

  /** As prom-client's Histogram gives them: cumulative buckets, +Inf, then sum and count. */
  private histogram(): Sample[] {
    const out: Sample[] = [];
    const bucket = 'http_request_duration_seconds_bucket';
    for (const s of this.series.values()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.buckets[i]!;
        out.push({ labels: { le }, sharedLabels: s.labels, value: acc, metricName: bucket });
      });
      out.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket });
      out.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: 'http_request_duration_seconds_sum' });
      out.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: 'http_request_duration_seconds_count' });
    }
    return out;
  }

  /**
   * What a prom-client registry reads of a metric: its name, help and type, and its samples on
   * demand (`getForPromString` for the text, with the series' labels apart; `get` for JSON, merged).
   */
  private metric(name: string, help: string, type: 'counter' | 'histogram', values: () => Sample[]) {
    const data = (samples: Sample[]) => ({ name, help, type, aggregator: 'sum', values: samples });
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      getForPromString: async () => data(values()),
      get: async () => data(values().map(({ sharedLabels, labels, ...v }) => ({ ...v, labels: { ...labels, ...sharedLabels } }))),
      reset: () => this.series.clear(),
    };
  }
}
