/**
 * Encrypted values are bound to their table, column and row (docs/architecture.md, "Secrets"): whoever
 * can write the database but lacks APP_KEY cannot copy a wallet's encrypted key into a webhook's
 * secret and read it back through the webhook delete route; keys:rotate rewrites values of the
 * earlier format (bound to the key only) so they are bound too, and once it has left none, a
 * value of that format is refused (issue 47, e): by this process, a restarted one, and keys:rotate.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, TEST_APP_KEY, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { createWebhook, owner, type Owner } from '../webhooks/fixtures.js';
import { keyIdOf } from '../../src/lib/crypto.js';
import { rotateSecrets } from '../../src/modules/secrets/secrets.service.js';
import { webhookPlace } from '../../src/modules/webhooks/webhooks.service.js';

/** A value as the previous version wrote it: AES-GCM with only `v1.<keyId>` as associated data. */
function legacyValue(plaintext: string): string {
  const key = Buffer.from(TEST_APP_KEY, 'base64');
  const keyId = keyIdOf(key);
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(`v1.${keyId}`));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', keyId, nonce.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
}

describe('encrypted values bound to their place', () => {
  let database: TestDatabase;
  let t: TestApp;
  let a: Owner;
  beforeAll(async () => {
    // A database as an upgrade from a version that wrote `v1` values finds it: migration 031 did
    // not mark it as having none, so this service still reads them until keys:rotate.
    database = await createTestDatabase();
    const first = await startTestApp({ database, keepDatabase: true });
    await first.store.db.deleteFrom('app_flags').execute();
    await first.close();
    t = await startTestApp({ database, keepDatabase: true });
    a = await owner(t);
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it("a wallet's encrypted key copied into a webhook's secret does not come out of the delete route", async () => {
    const hook = await createWebhook(t, a, { url: 'https://example.com/h', type: 'charge', events: ['created'], signature: 'whsec_real' });
    const wallet = await t.store.db
      .selectFrom('wallets')
      .select(['private_key_enc'])
      .where('id', '=', a.walletId)
      .executeTakeFirstOrThrow();
    // In its own place the key decrypts (the wallet can sign).
    const own = await t.store.db.selectFrom('wallets').select('address').where('id', '=', a.walletId).executeTakeFirstOrThrow();
    expect((await t.services.wallets.signer(a.walletId)).address).toBe(own.address);
    await t.store.db.updateTable('webhooks').set({ signature_enc: wallet.private_key_enc }).where('id', '=', hook.id).execute();
    const res = await t.request('GET', `/api/wallet/${a.walletId}/webhook/delete/${hook.id}`, { token: a.user.token });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ status: 'error', message: 'Internal server error', data: null });
    expect(res.text).not.toMatch(/0x[0-9a-f]{64}/);
  });

  it('keys:rotate rewrites a value of the earlier format bound to its row; it reads the same', async () => {
    const hook = await createWebhook(t, a, { url: 'https://example.com/legacy', type: 'charge', events: ['created'] });
    await t.store.db
      .updateTable('webhooks')
      .set({ signature_enc: legacyValue('whsec_legacy') })
      .where('id', '=', hook.id)
      .execute();
    const report = await rotateSecrets(t.ctx);
    expect(report.rotated.webhook_secrets).toBe(1);
    const row = await t.store.db.selectFrom('webhooks').select('signature_enc').where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.signature_enc!.startsWith('v2.')).toBe(true);
    expect(t.ctx.secrets.decrypt(row.signature_enc!, webhookPlace(hook.id, 'signature_enc'))).toBe('whsec_legacy');
    expect(() => t.ctx.secrets.decrypt(row.signature_enc!, webhookPlace(hook.id + 1, 'signature_enc'))).toThrow(/decryption failed/);
    expect((await rotateSecrets(t.ctx)).rotated.webhook_secrets).toBe(0);
  });

  it('after keys:rotate has left no v1 value, one put in a row (a swapped ciphertext) is refused everywhere', async () => {
    const report = await rotateSecrets(t.ctx);
    expect(report.unbound_refused).toBe(true);
    expect(t.ctx.secrets.refusesUnbound).toBe(true);
    const flag = await t.store.db.selectFrom('app_flags').select('name').execute();
    expect(flag).toEqual([{ name: 'secrets_unbound_refused' }]);

    // A v1 ciphertext under the current key (from an old backup, another row) written into a webhook.
    const hook = await createWebhook(t, a, { url: 'https://example.com/swapped', type: 'charge', events: ['created'] });
    const swapped = legacyValue('whsec_from_an_old_backup');
    await t.store.db.updateTable('webhooks').set({ signature_enc: swapped }).where('id', '=', hook.id).execute();
    expect(() => t.ctx.secrets.decrypt(swapped, webhookPlace(hook.id, 'signature_enc'))).toThrow(/unbound \(v1\) value refused/);
    const res = await t.request('GET', `/api/wallet/${a.walletId}/webhook/delete/${hook.id}`, { token: a.user.token });
    expect(res.status).toBe(500);
    expect(res.text).not.toContain('whsec_from_an_old_backup');

    // keys:rotate does not launder it into a bound value: the run stops, naming the row.
    await expect(rotateSecrets(t.ctx)).rejects.toThrow(
      `webhooks.signature_enc of row ${hook.id} holds an unbound (v1) value, refused since keys:rotate bound every value`,
    );
    const row = await t.store.db.selectFrom('webhooks').select('signature_enc').where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.signature_enc).toBe(swapped);

    // A process started afterwards refuses it from the start.
    const restarted = await startTestApp({ database, keepDatabase: true });
    try {
      expect(restarted.ctx.secrets.refusesUnbound).toBe(true);
      expect(() => restarted.ctx.secrets.decrypt(swapped, webhookPlace(hook.id, 'signature_enc'))).toThrow(/unbound \(v1\) value refused/);
    } finally {
      await restarted.close();
    }
    await t.store.db.updateTable('webhooks').set({ signature_enc: null }).where('id', '=', hook.id).execute();
  });
});
