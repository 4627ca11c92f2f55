/**
 * SQLite (in vitest.config.ts's ONCE list): each status's claim query walks the
 * (status, next_attempt_at) index in order. With `status IN ('pending', 'retrying')` SQLite read
 * every due row, bodies and all, into a temporary B-tree to sort it, for every claim: the further a
 * worker fell behind (a receiver down for an hour, a burst of events), the slower each claim.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dueDeliveriesQuery } from '../../src/workers/deliveries/deliveries.repository.js';

describe('claim query plan (SQLite)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { WORKERS: 'false' } });
  });
  afterAll(async () => t?.close());

  it('uses the due index and sorts nothing, for each status, with and without webhooks left out', async () => {
    expect(t.store.driver).toBe('sqlite');
    for (const status of ['pending', 'retrying'] as const) {
      for (const excludeWebhooks of [[], [3, 4]]) {
        const q = dueDeliveriesQuery(t.store.db, status, { nowMs: Date.now(), excludeWebhooks, limit: 80 }).compile();
        const plan = (await t.store.db.executeQuery({ ...q, sql: `EXPLAIN QUERY PLAN ${q.sql}` })).rows as Array<{ detail: string }>;
        const text = plan.map((p) => p.detail).join(' | ');
        expect(text).toContain('USING INDEX webhook_deliveries_due_idx (status=? AND next_attempt_at<?)');
        expect(text).not.toContain('TEMP B-TREE');
      }
    }
  });
});
