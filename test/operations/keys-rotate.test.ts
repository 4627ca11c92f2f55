/**
 * `npm run cli -- keys:rotate`: every secret (wallet keys and mnemonics, deposit-address keys,
 * webhook secrets and headers) re-encrypted under the current APP_KEY. Afterwards the service
 * starts with only the new key and reads every one of them: by decrypting each stored value,
 * and through the real paths (a webhook delivery signed with the secret and carrying the header,
 * a charge's deposit key, the wallet's mnemonic).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyToAddress } from 'viem/accounts';
import { startTestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { ensureNetwork } from '../helpers/factories.js';
import { runCli } from '../helpers/process.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { signatureHeader } from '../../src/modules/webhooks/webhooks.signing.js';
import { SECRET_COLUMNS } from '../../src/modules/secrets/secrets.repository.js';
import { deriveKey } from '../../src/chain/keys.js';
import { walletPlace } from '../../src/modules/wallets/wallets.repository.js';
import { subWalletPlace } from '../../src/modules/charges/charges.repository.js';

const OLD_KEY = randomBytes(32).toString('base64');
const NEW_KEY = randomBytes(32).toString('base64');
const SECRET = 'whsec_rotate-me-5151';
const HEADER = 'Bearer partner-token-7373';

describe('keys:rotate', () => {
  let database: TestDatabase;
  let rx: Receiver;
  let walletId = 0;
  beforeAll(async () => {
    database = await createTestDatabase();
    rx = await startReceiver();
    const t = await startTestApp({ database, keepDatabase: true, env: { APP_KEY: OLD_KEY } });
    try {
      const u = await t.createUser({ email: 'rotate@example.com', password: 'rotate-password' });
      const networkId = (await ensureNetwork(t)).id;
      for (let i = 0; i < 2; i++) {
        const w = await t.request('POST', '/api/wallet/create', { token: u.token, body: { name: `R${i}`, network_id: networkId } });
        walletId = w.body.data.id;
      }
      const hook = await t.request('POST', `/api/wallet/${walletId}/webhook/create`, {
        token: u.token,
        body: { url: `${rx.url}/hook`, type: 'wallet', events: ['updated'], signature: SECRET, with_headers: { Authorization: HEADER } },
      });
      expect(hook.status).toBe(200);
      for (let i = 0; i < 3; i++) {
        expect(
          (await t.request('POST', `/api/wallet/${walletId}/charge/create`, { token: u.token, body: { amount: '1', token: 'ETH' } }))
            .status,
        ).toBe(200);
      }
    } finally {
      await t.close();
    }
  });
  afterAll(async () => {
    await rx?.close();
    await database?.drop();
  });

  it('lists every encrypted column of the schema', async () => {
    const t = await startTestApp({ database, keepDatabase: true, env: { APP_KEY: OLD_KEY } });
    try {
      const columns =
        t.store.driver === 'postgres'
          ? (
              await sql<{
                t: string;
                c: string;
              }>`select table_name as t, column_name as c from information_schema.columns where table_schema = 'public' and column_name like '%\\_enc'`.execute(
                t.store.db,
              )
            ).rows
          : (
              await sql<{
                t: string;
                c: string;
              }>`select m.name as t, p.name as c from sqlite_master m join pragma_table_info(m.name) p where m.type = 'table' and p.name like '%\\_enc' escape '\\'`.execute(
                t.store.db,
              )
            ).rows;
      const found = columns.map((r) => `${r.t}.${r.c}`).sort();
      expect(found).toEqual(SECRET_COLUMNS.map((c) => `${c.table}.${c.column}`).sort());
    } finally {
      await t.close();
    }
  });

  it('re-encrypts every secret under the new key; then the service reads them all with only that key', async () => {
    const env = {
      NODE_ENV: 'test',
      DATA_DIR: database.dataDir,
      APP_KEY: NEW_KEY,
      APP_PREVIOUS_KEYS: OLD_KEY,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    };
    const first = await runCli(['keys:rotate'], env);
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({
      rotated: { wallet_private_keys: 2, wallet_mnemonics: 2, sub_wallet_private_keys: 3, webhook_secrets: 1, webhook_headers: 1 },
      already_current: 0,
      total: 9,
    });
    const again = await runCli(['keys:rotate'], env);
    expect(again.json).toMatchObject({
      rotated: { wallet_private_keys: 0, wallet_mnemonics: 0, sub_wallet_private_keys: 0, webhook_secrets: 0, webhook_headers: 0 },
      already_current: 9,
    });

    // Only the new key from here on.
    const t = await startTestApp({ database, keepDatabase: true, env: { APP_KEY: NEW_KEY } });
    try {
      expect(first.json.key_id).toBe(t.ctx.secrets.activeKeyId);
      let read = 0;
      for (const c of SECRET_COLUMNS) {
        const rows = await t.store.db
          .selectFrom(c.table)
          .select(['id', `${c.column} as v`] as never)
          .execute();
        for (const { id, v } of rows as unknown as { id: number; v: string | null }[]) {
          if (v === null) continue;
          expect(v.split('.')[1]).toBe(t.ctx.secrets.activeKeyId);
          expect(v.split('.')[0]).toBe('v2');
          expect(t.ctx.secrets.decrypt(v, { table: c.table, column: c.column, id }).length).toBeGreaterThan(0);
          read += 1;
        }
      }
      expect(read).toBe(9);
      const wallet = await t.store.db
        .selectFrom('wallets')
        .select(['id', 'address', 'private_key_enc'])
        .where('id', '=', walletId)
        .executeTakeFirstOrThrow();
      expect(
        privateKeyToAddress(t.ctx.secrets.decrypt(wallet.private_key_enc, walletPlace(wallet.id, 'private_key_enc')) as `0x${string}`),
      ).toBe(wallet.address);
      expect(deriveKey(await t.services.wallets.mnemonic(walletId), 0).address).toBe(wallet.address);
      const subs = await t.store.db.selectFrom('sub_wallets').select(['id', 'address', 'private_key_enc']).execute();
      for (const s of subs)
        expect(privateKeyToAddress(t.ctx.secrets.decrypt(s.private_key_enc, subWalletPlace(s.id)) as `0x${string}`)).toBe(s.address);

      // A real delivery: the webhook's header and a signature made with its secret.
      const login = await t.request('POST', '/api/auth/login', { body: { email: 'rotate@example.com', password: 'rotate-password' } });
      t.startWorkers();
      await t.request('POST', `/api/wallet/${walletId}/update`, { token: login.body.data.token, body: { name: 'Rotated' } });
      const [delivery] = await waitFor(() => (rx.to('/hook').length > 0 ? rx.to('/hook') : null), { message: 'delivery after rotation' });
      expect(delivery!.headers.authorization).toBe(HEADER);
      expect(delivery!.headers['x-webhook-signature']).toBe(signatureHeader(SECRET, delivery!.body));
    } finally {
      await t.close();
    }
  });
});
