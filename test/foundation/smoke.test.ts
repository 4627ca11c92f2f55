import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';

describe('smoke', () => {
  let t: TestApp;
  let chain: TestChain;
  beforeAll(async () => { t = await startTestApp(); chain = await startTestChain(); });
  afterAll(async () => { await t?.close(); await chain?.stop(); });
  it('creates a wallet', async () => {
    const nid = await chain.register(t);
    const u = await t.createUser();
    const w = await t.request('POST', '/api/wallet/create', { token: u.token, body: { name: 'Main', network_id: nid } });
    console.log(w.status, JSON.stringify(w.body, null, 1));
    await chain.setBalance(w.body.data.address, 1500000000000000000n);
    const fresh = await t.services.balances.refresh({ id: w.body.data.id, user_id: u.id, network_id: nid, address: w.body.data.address });
    console.log(fresh);
    const ev = await t.store.db.selectFrom('events').selectAll().execute();
    console.log(ev);
    expect(w.status).toBe(200);
  });
});
