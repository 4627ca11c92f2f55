import { describe, expect, it } from 'vitest';
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
});
