/**
 * GET /metrics: Prometheus text from prom-client, read back with a Prometheus text parser.
 * One request raises its counter; the database-fed figures (pending and stuck transfers,
 * webhook attempts by outcome, the watcher's blocks) are there; METRICS_TOKEN guards it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import parsePrometheusTextFormat, { type PromFamily } from 'parse-prometheus-text-format';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWalletRow, ensureNetwork } from '../helpers/factories.js';

function family(families: PromFamily[], name: string): PromFamily {
  const f = families.find((x) => x.name === name);
  if (!f) throw new Error(`metric ${name} missing`);
  return f;
}

function requestsFor(families: PromFamily[], route: string, status: string): number {
  const f = family(families, 'http_requests_total');
  const sample = f.metrics.find((m) => m.labels?.route === route && m.labels?.status === status && m.labels?.method === 'GET');
  return sample ? Number(sample.value) : 0;
}

describe('/metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { TX_STUCK_AFTER_S: '60' } });
  });
  afterAll(async () => t?.close());

  async function scrape(): Promise<PromFamily[]> {
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).not.toMatch(/"status"/); // bare text, not the envelope
    return parsePrometheusTextFormat(text);
  }

  it('parses as Prometheus text with request, webhook, transaction, watcher and process metrics', async () => {
    const families = await scrape();
    const names = families.map((f) => f.name);
    for (const n of [
      'http_requests_total',
      'http_request_duration_seconds',
      'webhook_attempts_total',
      'transactions_pending',
      'transactions_stuck',
      'watcher_head_block',
      'watcher_synced_block',
      'network_rpc_up',
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(names, n).toContain(n);
    }
    expect(family(families, 'http_request_duration_seconds').type).toBe('HISTOGRAM');
    expect(family(families, 'webhook_attempts_total').type).toBe('COUNTER');
    const outcomes = family(families, 'webhook_attempts_total')
      .metrics.map((m) => m.labels?.outcome)
      .sort();
    expect(outcomes).toEqual(['http_error', 'network_error', 'success']);
  });

  it('moves: one request raises its counter by one and lands in its histogram', async () => {
    const u = await t.createUser();
    const before = await scrape();
    const was = requestsFor(before, '/api/auth/me', '200');
    expect((await t.request('GET', '/api/auth/me', { token: u.token })).status).toBe(200);
    const after = await scrape();
    expect(requestsFor(after, '/api/auth/me', '200')).toBe(was + 1);
    // The parser folds labelled histograms together, so the histogram's count is read from the text.
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const count = /^http_request_duration_seconds_count\{method="GET",route="\/api\/auth\/me",status="200"\} (\d+)$/m.exec(text);
    expect(Number(count?.[1])).toBe(was + 1);
    // Unknown paths share one label value, so a scan cannot grow the label set.
    await t.request('GET', '/api/no-such-route-123');
    const scanned = await scrape();
    expect(family(scanned, 'http_requests_total').metrics.some((m) => m.labels?.route?.includes('no-such-route'))).toBe(false);
    expect(requestsFor(scanned, 'unmatched', '404')).toBeGreaterThanOrEqual(1);
  });

  it('counts pending and stuck transactions from the database', async () => {
    const u = await t.createUser();
    const db = t.store.db;
    const now = Date.now();
    const network = await ensureNetwork(t, 'http://127.0.0.1:9/rpc/secret-key', 'Metrics net');
    const wallet = await createWalletRow(t, u.id, { networkId: network.id });
    const token = await db.selectFrom('wallet_tokens').select('id').where('wallet_id', '=', wallet.id).executeTakeFirstOrThrow();
    const tx = (createdAt: number, n: number) => ({
      wallet_id: wallet.id,
      token_id: token.id,
      type: 'send',
      status: 'pending',
      amount: '1',
      fee_reserved: '0',
      from_address: wallet.address,
      to_address: '0x0000000000000000000000000000000000000002',
      tx_hash: `0x${String(n).padStart(64, '0')}`,
      log_index: -1,
      nonce: n,
      created_at: createdAt,
      updated_at: createdAt,
    });
    await db
      .insertInto('transactions')
      .values([tx(now - 120_000, 1), tx(now - 1_000, 2)] as never)
      .execute();
    const families = await scrape();
    expect(Number(family(families, 'transactions_pending').metrics[0]?.value)).toBe(2);
    expect(Number(family(families, 'transactions_stuck').metrics[0]?.value)).toBe(1);
    // The network whose node does not answer is reported down, by name, never by its URL.
    const up = family(families, 'network_rpc_up').metrics.find((m) => m.labels?.network === 'Metrics net');
    expect(up?.value).toBe('0');
  });
});

// Issue 47 (b): production does not publish its figures by default; it says why in the log.
describe('/metrics in production', () => {
  it('is not served without METRICS_TOKEN (404), and the start log says what to set', async () => {
    const t = await startTestApp({ env: { NODE_ENV: 'production' } });
    try {
      const res = await t.request('GET', '/metrics');
      expect(res.status).toBe(404);
      expect(res.text).not.toMatch(/http_requests_total/);
      const warning = t.logs
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .find((l) => l.msg.startsWith('METRICS_TOKEN is not set'));
      expect(warning).toMatchObject({ level: 40 });
      expect(warning?.msg).toContain('METRICS_PUBLIC=true');
    } finally {
      await t.close();
    }
  });

  it('needs the token when METRICS_TOKEN is set', async () => {
    const t = await startTestApp({ env: { NODE_ENV: 'production', METRICS_TOKEN: 'prod-scrape-4747' } });
    try {
      expect((await t.request('GET', '/metrics')).status).toBe(401);
      const right = await t.request('GET', '/metrics', { headers: { authorization: 'Bearer prod-scrape-4747' } });
      expect(right.status).toBe(200);
      expect(t.logs.some((l) => l.includes('METRICS_TOKEN is not set'))).toBe(false);
    } finally {
      await t.close();
    }
  });

  it('is open again only with METRICS_PUBLIC=true', async () => {
    const t = await startTestApp({ env: { NODE_ENV: 'production', METRICS_PUBLIC: 'true' } });
    try {
      const res = await t.request('GET', '/metrics');
      expect(res.status).toBe(200);
      expect(parsePrometheusTextFormat(res.text).some((f) => f.name === 'http_requests_total')).toBe(true);
    } finally {
      await t.close();
    }
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN: 'scrape-secret-123' } });
  });
  afterAll(async () => t?.close());

  it('needs that Bearer token', async () => {
    const none = await t.request('GET', '/metrics');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ status: 'error', message: 'Unauthenticated', data: null });
    const wrong = await t.request('GET', '/metrics', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const right = await t.request('GET', '/metrics', { headers: { authorization: 'Bearer scrape-secret-123' } });
    expect(right.status).toBe(200);
    expect(parsePrometheusTextFormat(right.text).some((f) => f.name === 'http_requests_total')).toBe(true);
  });
});
