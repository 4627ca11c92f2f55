/**
 * The supervisor counts only the caller's own objects (docs/architecture.md, "Supervisor"): another
 * user's queued deliveries and pending transfers are not in the caller's figures (the
 * deployment-wide ones are on /metrics).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWebhook, owner, type Owner } from '../webhooks/fixtures.js';

describe("supervisor: the caller's own counts", () => {
  let t: TestApp;
  let a: Owner;
  let b: Owner;
  beforeAll(async () => {
    t = await startTestApp();
    a = await owner(t);
    b = await owner(t);
  });
  afterAll(async () => t?.close());

  const queueTests = async (o: Owner, n: number) => {
    const w = await createWebhook(t, o, { url: 'https://example.com/hook', type: 'transaction', events: ['confirmed'] });
    for (let i = 0; i < n; i++)
      expect((await t.request('POST', `/api/wallet/${o.walletId}/webhook/${w.id}/test`, { token: o.user.token })).status).toBe(200);
  };
  const pendingTransfer = async (o: Owner, stuck: boolean) => {
    const token = await t.store.db.selectFrom('wallet_tokens').select('id').where('wallet_id', '=', o.walletId).executeTakeFirstOrThrow();
    const now = Date.now();
    await t.store.db
      .insertInto('transactions')
      .values({
        wallet_id: o.walletId,
        token_id: token.id,
        type: 'transfer',
        status: 'pending',
        amount: '1',
        fee_reserved: '1',
        from_address: '0x0000000000000000000000000000000000000001',
        to_address: '0x0000000000000000000000000000000000000002',
        log_index: -1,
        created_at: now,
        updated_at: now,
        stuck_at: stuck ? now : null,
      })
      .execute();
  };
  const counts = async (o: Owner) => {
    const res = await t.request('GET', '/api/supervisor', { token: o.user.token });
    expect(res.status).toBe(200);
    return { webhooks: res.body.data.webhooks, transactions: res.body.data.transactions };
  };

  it("each user sees their own deliveries and pending transfers, never the other's", async () => {
    await queueTests(a, 1);
    await queueTests(b, 3);
    await pendingTransfer(b, true);
    await pendingTransfer(b, false);
    expect(await counts(a)).toEqual({
      webhooks: { pending: 1, retrying: 0, failed: 0, delivered_last_hour: 0 },
      transactions: { pending: 0, stuck: 0 },
    });
    expect(await counts(b)).toEqual({
      webhooks: { pending: 3, retrying: 0, failed: 0, delivered_last_hour: 0 },
      transactions: { pending: 2, stuck: 1 },
    });
  });
});
