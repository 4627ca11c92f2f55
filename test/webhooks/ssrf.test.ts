import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { attemptsOf, createWebhook, deliveriesOf, emit, owner, startWorker, type Owner } from './fixtures.js';

const PRIVATE = 'The url field must not point to a private, loopback, link-local or metadata address.';

describe('SSRF guard (WEBHOOK_ALLOW_PRIVATE=false)', () => {
  let t: TestApp;
  let o: Owner;
  let rx: Receiver;

  beforeAll(async () => {
    t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_RETRY_DELAYS: '60' } });
    o = await owner(t);
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
    await t?.close();
  });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://localhost/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.5/hook',
    'http://192.168.1.10/hook',
    'http://100.64.1.1/hook',
    'http://0.0.0.0/hook',
    'http://2130706433/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[fe80::1]/hook',
    'http://[fd00:ec2::254]/hook',
  ])('refuses %s on create (422, field url)', async (url) => {
    const res = await t.request('POST', `/api/wallet/${o.walletId}/webhook/create`, {
      token: o.user.token,
      body: { url, type: 'charge', events: ['*'] },
    });
    expectValidationError(res, { url: [PRIVATE] });
  });

  it('accepts a public address, and refuses a private one on update', async () => {
    const hook = await createWebhook(t, o, { url: 'https://93.184.215.14/hook', type: 'charge', events: ['*'] });
    const res = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hook.id}/update`, {
      token: o.user.token,
      body: { url: 'http://127.0.0.1/x' },
    });
    expectValidationError(res, { url: [PRIVATE] });
  });

  it('checks again at delivery time: a URL that now reaches a private address gets nothing', async () => {
    // As if DNS changed after the webhook was registered: rows whose URLs point at loopback.
    const now = Date.now();
    const ids: number[] = [];
    for (const url of [`${rx.url}/literal`, `${rx.url.replace('127.0.0.1', 'localhost')}/name`]) {
      const row = await t.store.db
        .insertInto('webhooks')
        .values({
          wallet_id: o.walletId,
          url,
          type: 'wallet',
          events: '["*"]',
          status: 'active',
          signature_enc: null,
          headers_enc: null,
          deleted_at: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    await emit(t, o, 'wallet.updated');
    const worker = startWorker(t);
    try {
      for (const id of ids) {
        const d = await waitFor(async () => (await deliveriesOf(t, id)).find((r) => r.attempts === 1));
        expect(d).toMatchObject({ status: 'retrying', response_status: null });
        expect(d.last_error).toMatch(/private or local address/);
        const [a] = await attemptsOf(t, d.id);
        expect(a).toMatchObject({ attempt: 1, response_status: null });
      }
    } finally {
      await worker.stop();
    }
    expect(rx.requests).toHaveLength(0);
  });
});
