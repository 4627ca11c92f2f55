/** No secret in plaintext in the database or the logs; the development key file is 0600. */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyToAddress } from 'viem/accounts';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ensureNetwork } from '../helpers/factories.js';
import { databaseText } from '../helpers/secrets.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { deriveKey } from '../../src/chain/keys.js';
import { walletPlace } from '../../src/modules/wallets/wallets.repository.js';
import { subWalletPlace } from '../../src/modules/charges/charges.repository.js';

describe('secrets at rest and in logs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { LOG_LEVEL: 'trace' } });
  });
  afterAll(async () => t?.close());

  it('stores private keys and mnemonics only encrypted, and logs none of them', async () => {
    const u = await t.createUser({ password: 'a-very-secret-password' });
    const networkId = (await ensureNetwork(t)).id;
    const created = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.request('POST', '/api/wallet/create', { token: u.token, body: { name: `W${i}`, network_id: networkId } });
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toMatch(/private_key|mnemonic/);
      created.push(res.body.data);
    }
    const rows = await t.store.db.selectFrom('wallets').select(['id', 'address', 'private_key_enc', 'mnemonic_enc']).execute();
    const text = await databaseText(t);
    const logs = t.logs.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.private_key_enc).toMatch(/^v2\./);
      const key = t.ctx.secrets.decrypt(row.private_key_enc, walletPlace(row.id, 'private_key_enc')) as `0x${string}`;
      const mnemonic = t.ctx.secrets.decrypt(row.mnemonic_enc, walletPlace(row.id, 'mnemonic_enc'));
      // The decrypted values are the real secrets of the address...
      expect(privateKeyToAddress(key)).toBe(row.address);
      expect(deriveKey(mnemonic, 0).address).toBe(row.address);
      // ...and neither appears anywhere in plaintext.
      for (const secret of [key, key.slice(2), mnemonic]) {
        expect(text.includes(secret)).toBe(false);
        expect(logs.includes(secret)).toBe(false);
      }
    }
    expect(text.includes('a-very-secret-password')).toBe(false);
    expect(logs.includes('a-very-secret-password')).toBe(false);
    expect(logs.includes(u.token)).toBe(false);
  });

  it('stores webhook secrets, webhook headers and deposit-address keys only encrypted, and logs none of them', async () => {
    const rx = await startReceiver();
    try {
      const u = await t.createUser();
      const networkId = (await ensureNetwork(t)).id;
      const wallet = (await t.request('POST', '/api/wallet/create', { token: u.token, body: { name: 'Hooks', network_id: networkId } }))
        .body.data;
      const secret = 'whsec_do-not-leak-4242';
      const headerValue = 'Bearer partner-token-9191';
      const hook = await t.request('POST', `/api/wallet/${wallet.id}/webhook/create`, {
        token: u.token,
        body: {
          url: `${rx.url}/hook`,
          type: 'wallet',
          events: ['updated'],
          signature: secret,
          with_headers: { Authorization: headerValue },
        },
      });
      expect(hook.status).toBe(200);
      expect(hook.text).not.toContain(secret);
      const charge = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
        token: u.token,
        body: { amount: '1', token: 'ETH' },
      });
      expect(charge.status).toBe(200);

      // A real delivery carries the header and a signature made with the secret.
      t.startWorkers();
      await t.request('POST', `/api/wallet/${wallet.id}/update`, { token: u.token, body: { name: 'Renamed' } });
      await waitFor(() => rx.to('/hook').length === 1, { message: 'delivery' });
      await t.workers!.stop();
      expect(rx.to('/hook')[0]!.headers.authorization).toBe(headerValue);

      const sub = await t.store.db
        .selectFrom('sub_wallets')
        .select(['id', 'private_key_enc'])
        .where('wallet_id', '=', wallet.id)
        .executeTakeFirstOrThrow();
      const subKey = t.ctx.secrets.decrypt(sub.private_key_enc, subWalletPlace(sub.id));
      const text = await databaseText(t);
      const logs = t.logs.join('\n');
      for (const plain of [secret, headerValue, 'partner-token-9191', subKey, subKey.slice(2)]) {
        expect(text.includes(plain), plain.slice(0, 12)).toBe(false);
        expect(logs.includes(plain), plain.slice(0, 12)).toBe(false);
      }
    } finally {
      await rx.close();
    }
  });

  it('redacts secrets that reach a log call by mistake', () => {
    t.ctx.log.error({ mnemonic: 'word word word', wallet: { private_key: '0xabc' }, headers: { authorization: 'Bearer zzz' } }, 'oops');
    const line = t.logs.find((l) => l.includes('"oops"'))!;
    expect(line).toBeDefined();
    expect(line).not.toMatch(/word word word|0xabc|zzz/);
    expect(line).toContain('[redacted]');
  });
});

describe('development key file', () => {
  it('is generated with mode 0600 when APP_KEY is not set, and reused', async () => {
    const t = await startTestApp({ env: { APP_KEY: '' } });
    try {
      const file = join(t.config.dataDir, 'app.key');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const enc = t.ctx.secrets.encrypt('hello', { table: 'webhooks', column: 'signature_enc', id: 1 });
      const again = await startTestApp({ env: { APP_KEY: '' }, database: t.database, keepDatabase: true });
      try {
        expect(again.ctx.secrets.decrypt(enc, { table: 'webhooks', column: 'signature_enc', id: 1 })).toBe('hello');
      } finally {
        await again.close();
      }
    } finally {
      await t.close();
    }
  });
});
