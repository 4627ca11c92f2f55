/**
 * The request metrics (src/modules/metrics/request-metrics.ts) scrape as the prom-client Counter
 * and Histogram they replace: the same text for the same requests, bucket by bucket.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestMetrics } from '../../src/modules/metrics/request-metrics.js';

const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const REQUESTS: Array<[string, string, number, number]> = [
  ['GET', '/api/wallet/:wallet/balance', 200, 0.0004],
  ['GET', '/api/wallet/:wallet/balance', 200, 0.005],
  ['GET', '/api/wallet/:wallet/balance', 200, 0.0051],
  ['POST', '/api/wallet/:wallet/update', 200, 0.3],
  ['GET', '/api/wallet/:wallet/balance', 429, 12],
  ['GET', 'unmatched', 404, 0.001],
  ['POST', '/api/wallet/:wallet/update', 200, 10],
];

describe('request metrics', () => {
  it('scrape to the same text as prom-client Counter and Histogram', async () => {
    const reference = new Registry();
    const counter = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered by this process, by method, route and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [reference],
    });
    const histogram = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: BOUNDS,
      registers: [reference],
    });
    const ours = new Registry();
    const metrics = new RequestMetrics(ours, BOUNDS);
    for (const [method, route, status, seconds] of REQUESTS) {
      counter.inc({ method, route, status: String(status) });
      histogram.observe({ method, route, status: String(status) }, seconds);
      metrics.observe(method, route, status, seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain(
      'http_request_duration_seconds_bucket{le="0.005",method="GET",route="/api/wallet/:wallet/balance",status="200"} 2',
    );
    expect(text).toContain('http_requests_total{method="POST",route="/api/wallet/:wallet/update",status="200"} 2');
    // And as JSON (what prom-client's cluster aggregation reads).
    // (prom-client's samples carry an empty `exemplar`; there are none here.)
    const withoutExemplars = (metrics: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) =>
      metrics.map((m) => ({
        ...m,
        values: m.values.map((value) => {
          const { exemplar, ...v } = value as typeof value & { exemplar?: unknown };
          expect(exemplar ?? null).toBeNull();
          return v;
        }),
      }));
    expect(withoutExemplars(await ours.getMetricsAsJSON())).toEqual(withoutExemplars(await reference.getMetricsAsJSON()));
  });
});
