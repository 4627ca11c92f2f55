import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../lib/crypto.js';
import { SecretCache } from './secret-cache.js';

const at = (id: number) => ({ table: 'webhooks', column: 'signature_enc', id });

describe('SecretCache', () => {
  const counting = () => {
    const calls: string[] = [];
    return { calls, decrypt: (enc: string) => (calls.push(enc), `plain(${enc})`) };
  };

  it('decrypts a ciphertext once while it is fresh, again after its time', () => {
    const d = counting();
    const cache = new SecretCache(d.decrypt, 1_000);
    expect(cache.get(at(1), 'c1', ['c1'], 0)).toBe('plain(c1)');
    expect(cache.get(at(1), 'c1', ['c1'], 999)).toBe('plain(c1)');
    expect(d.calls).toEqual(['c1']);
    expect(cache.get(at(1), 'c1', ['c1'], 1_000)).toBe('plain(c1)');
    expect(d.calls).toEqual(['c1', 'c1']);
  });

  it('drops what is past its time on prune', () => {
    const cache = new SecretCache(counting().decrypt, 1_000);
    cache.get(at(1), 'a', ['a'], 0);
    cache.get(at(2), 'b', ['b'], 500);
    cache.prune(1_200);
    expect(cache.size).toBe(1);
    cache.prune(1_500);
    expect(cache.size).toBe(0);
  });

  it("drops a webhook's old ciphertexts when a delivery shows new ones, and everything of it on forget", () => {
    const cache = new SecretCache(counting().decrypt);
    cache.get(at(1), 'old-secret', ['old-secret', 'headers'], 0);
    cache.get(at(1), 'headers', ['old-secret', 'headers'], 0);
    cache.get(at(2), 'other', ['other'], 0);
    expect(cache.size).toBe(3);
    // Rotated elsewhere: the new secret arrives with the headers unchanged.
    cache.get(at(1), 'new-secret', ['new-secret', 'headers'], 10);
    expect(cache.size).toBe(3);
    cache.forget(1);
    expect(cache.size).toBe(1);
    cache.forget(2);
    expect(cache.size).toBe(0);
  });

  // Issue 47 (f): a ciphertext copied into another webhook's row (or another column) does not
  // decrypt there (values are bound to their place); the cache must not answer it from the
  // entry of the row it was copied from.
  it("does not hand one webhook's secret to another row holding the same ciphertext", () => {
    const box = new SecretBox([{ id: 'k', key: randomBytes(32) }], 'k');
    const cache = new SecretCache((enc, place) => box.decrypt(enc, place));
    const enc = box.encrypt('whsec_of_webhook_1', at(1));
    expect(cache.get(at(1), enc, [enc], 0)).toBe('whsec_of_webhook_1');
    // Webhook 2's row was given webhook 1's ciphertext (a copied row): decrypted at its own place, refused.
    expect(() => cache.get(at(2), enc, [enc], 1)).toThrow(/decryption failed/);
    // The same webhook's other column holding it: refused too.
    const headers = { table: 'webhooks', column: 'headers_enc', id: 1 };
    expect(() => cache.get(headers, enc, [enc, enc], 2)).toThrow(/decryption failed/);
    // The rightful row still reads its own value (from the cache).
    expect(cache.get(at(1), enc, [enc], 3)).toBe('whsec_of_webhook_1');
    expect(cache.size).toBe(1);
  });

  it('keys an entry by webhook, column and ciphertext', () => {
    const calls: string[] = [];
    const cache = new SecretCache((enc, place) => (calls.push(`${place.column}#${place.id}:${enc}`), `plain(${enc}@${place.id})`));
    expect(cache.get(at(1), 'same', ['same'], 0)).toBe('plain(same@1)');
    expect(cache.get(at(2), 'same', ['same'], 0)).toBe('plain(same@2)');
    expect(cache.get(at(1), 'same', ['same'], 0)).toBe('plain(same@1)');
    expect(calls).toEqual(['signature_enc#1:same', 'signature_enc#2:same']);
    cache.forget(1);
    expect(cache.size).toBe(1);
    expect(cache.get(at(2), 'same', ['same'], 0)).toBe('plain(same@2)');
    expect(calls).toHaveLength(2);
  });
});
