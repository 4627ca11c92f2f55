import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCipheriv, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  SecretBox,
  UnboundSecretRefused,
  dummyPasswordHash,
  hashPassword,
  needsRehash,
  scryptParamsOf,
  hmacSha256Base64,
  hmacSha256Hex,
  keyIdOf,
  loadOrCreateKeyFile,
  parseAppKey,
  randomTokenString,
  sha256Hex,
  verifyPassword,
} from './crypto.js';

const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);

/** Replace the token segment at `index` with a version that has one bit flipped. */
function flipBit(token: string, index: number): string {
  const parts = token.split('.');
  const bytes = Buffer.from(parts[index] ?? '', 'base64url');
  bytes[0] = (bytes[0] ?? 0) ^ 0x01;
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
}

/** The error `fn` throws; fails the test if it returns instead. */
function thrownBy(fn: () => unknown): Error {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected a throw').toBeInstanceOf(Error);
  return caught as Error;
}

const P = { table: 'webhooks', column: 'signature_enc', id: 1 };

describe('SecretBox', () => {
  const box = new SecretBox([{ id: 'a', key: keyA }], 'a');

  it('round-trips', () => {
    for (const plaintext of ['', 'hello', '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', 'ünïcødé ✓']) {
      expect(box.decrypt(box.encrypt(plaintext, P), P)).toBe(plaintext);
    }
  });

  it('produces the documented token format', () => {
    const token = box.encrypt('secret', P);
    const parts = token.split('.');
    expect(parts).toHaveLength(5);
    expect(parts[0]).toBe('v2');
    expect(parts[1]).toBe('a');
    expect(Buffer.from(parts[2] ?? '', 'base64url')).toHaveLength(12);
    expect(Buffer.from(parts[4] ?? '', 'base64url')).toHaveLength(16);
    expect(token).not.toContain('secret');
  });

  it('uses a fresh nonce for every encryption', () => {
    const tokens = new Set(Array.from({ length: 50 }, () => box.encrypt('same plaintext', P)));
    expect(tokens.size).toBe(50);
    const nonces = new Set([...tokens].map((t) => t.split('.')[2]));
    expect(nonces.size).toBe(50);
  });

  it('detects tampering with nonce, ciphertext or tag', () => {
    const token = box.encrypt('do not touch', P);
    for (const index of [2, 3, 4]) {
      expect(() => box.decrypt(flipBit(token, index), P)).toThrow(/decryption failed/);
    }
  });

  it('does not leak plaintext or key in errors', () => {
    const token = box.encrypt('super-secret-value', P);
    const { message } = thrownBy(() => box.decrypt(flipBit(token, 3), P));
    expect(message).toMatch(/decryption failed/);
    expect(message).not.toContain('super-secret-value');
    expect(message).not.toContain(keyA.toString('base64'));
    expect(message).not.toContain(keyA.toString('hex'));
  });

  it('binds the key id: moving a token to another key id fails', () => {
    const both = new SecretBox(
      [
        { id: 'a', key: keyA },
        { id: 'b', key: keyA }, // same key bytes, different id
      ],
      'a',
    );
    const token = both.encrypt('x', P);
    const swapped = token.replace(/^v2\.a\./, 'v2.b.');
    expect(() => both.decrypt(swapped, P)).toThrow(/decryption failed/);
  });

  it('rejects unknown key ids and malformed tokens', () => {
    const other = new SecretBox([{ id: 'b', key: keyB }], 'b');
    expect(() => box.decrypt(other.encrypt('x', P), P)).toThrow(/unknown key id "b"/);
    expect(() => box.decrypt('', P)).toThrow(/malformed/);
    expect(() => box.decrypt('v3.a.AAAA.AAAA.AAAA', P)).toThrow(/malformed/);
    expect(() => box.decrypt('v1.a.AAAA.AAAA', P)).toThrow(/malformed/);
    expect(() => box.decrypt('v1.a.!!!!.AAAA.AAAA', P)).toThrow(/malformed/);
    expect(() => box.decrypt('v1.a.AAAA.AAAA.AAAA', P)).toThrow(/malformed/); // nonce too short
  });

  it('supports key rotation', () => {
    const oldBox = new SecretBox([{ id: 'old', key: keyA }], 'old');
    const legacy = oldBox.encrypt('legacy secret', P);

    const rotated = new SecretBox(
      [
        { id: 'old', key: keyA },
        { id: 'new', key: keyB },
      ],
      'new',
    );
    expect(rotated.activeKeyId).toBe('new');
    expect(rotated.decrypt(legacy, P)).toBe('legacy secret');
    const fresh = rotated.encrypt('fresh secret', P);
    expect(fresh.split('.')[1]).toBe('new');
    expect(rotated.decrypt(fresh, P)).toBe('fresh secret');
    // The old box cannot read values written with the new key.
    expect(() => oldBox.decrypt(fresh, P)).toThrow(/unknown key id/);
  });

  it('binds table, column and row: a value copied to another place does not decrypt', () => {
    const key = box.encrypt('0xwallet-private-key', { table: 'wallets', column: 'private_key_enc', id: 7 });
    expect(box.decrypt(key, { table: 'wallets', column: 'private_key_enc', id: 7 })).toBe('0xwallet-private-key');
    for (const elsewhere of [
      { table: 'webhooks', column: 'signature_enc', id: 7 },
      { table: 'wallets', column: 'mnemonic_enc', id: 7 },
      { table: 'wallets', column: 'private_key_enc', id: 8 },
    ]) {
      expect(() => box.decrypt(key, elsewhere)).toThrow(/decryption failed/);
    }
  });

  it('still reads a v1 value (bound to its key id only) until keys:rotate rewrites it; isCurrent tells them apart', () => {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', keyA, nonce, { authTagLength: 16 });
    cipher.setAAD(Buffer.from('v1.a'));
    const ct = Buffer.concat([cipher.update('legacy', 'utf8'), cipher.final()]);
    const v1 = ['v1', 'a', nonce.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
    expect(box.decrypt(v1, P)).toBe('legacy');
    expect(box.isCurrent(v1)).toBe(false);
    expect(box.isCurrent(box.encrypt('x', P))).toBe(true);
  });

  it('refuses a v1 value once told every value is bound (refuseUnbound); v2 values still read', () => {
    const own = new SecretBox([{ id: 'a', key: keyA }], 'a');
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', keyA, nonce, { authTagLength: 16 });
    cipher.setAAD(Buffer.from('v1.a'));
    const ct = Buffer.concat([cipher.update('swapped', 'utf8'), cipher.final()]);
    const v1 = ['v1', 'a', nonce.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
    const v2 = own.encrypt('bound', P);
    expect(own.decrypt(v1, P)).toBe('swapped');
    expect(own.refusesUnbound).toBe(false);
    own.refuseUnbound();
    expect(own.refusesUnbound).toBe(true);
    const err = thrownBy(() => own.decrypt(v1, P));
    expect(err).toBeInstanceOf(UnboundSecretRefused);
    expect(err.message).toBe('SecretBox: unbound (v1) value refused: keys:rotate has bound every value to its place');
    expect(err.message).not.toContain('swapped');
    expect(own.decrypt(v2, P)).toBe('bound');
  });

  it('validates its configuration', () => {
    expect(() => new SecretBox([{ id: 'a', key: Buffer.alloc(31) }], 'a')).toThrow(/32 bytes/);
    expect(() => new SecretBox([{ id: 'a', key: Buffer.alloc(33) }], 'a')).toThrow(/32 bytes/);
    expect(() => new SecretBox([{ id: 'a.b', key: keyA }], 'a.b')).toThrow(/'\.'/);
    expect(() => new SecretBox([{ id: '', key: keyA }], '')).toThrow(/non-empty/);
    expect(() => new SecretBox([{ id: 'a', key: keyA }], 'b')).toThrow(/active key id/);
    expect(
      () =>
        new SecretBox(
          [
            { id: 'a', key: keyA },
            { id: 'a', key: keyB },
          ],
          'a',
        ),
    ).toThrow(/duplicate/);
  });
});

describe('keyIdOf', () => {
  it('is the first 8 hex chars of sha256 of the key', () => {
    const id = keyIdOf(keyA);
    expect(id).toMatch(/^[0-9a-f]{8}$/);
    expect(id).toBe(sha256Hex(keyA).slice(0, 8));
    expect(keyIdOf(Buffer.from(keyA))).toBe(id);
    expect(keyIdOf(keyB)).not.toBe(id);
  });
});

describe('password hashing', () => {
  it('hashes in the documented format and verifies', async () => {
    const encoded = await hashPassword('correct horse battery staple');
    const parts = encoded.split('$');
    expect(parts.slice(0, 4)).toEqual(['scrypt', '131072', '8', '1']);
    expect(Buffer.from(parts[4] ?? '', 'base64')).toHaveLength(16);
    expect(Buffer.from(parts[5] ?? '', 'base64')).toHaveLength(64);
    expect(await verifyPassword('correct horse battery staple', encoded)).toBe(true);
    expect(await verifyPassword('wrong password', encoded)).toBe(false);
    expect(await verifyPassword('', encoded)).toBe(false);
  });

  it('salts every hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same', 1024), hashPassword('same', 1024)]);
    expect(a).not.toBe(b);
  });

  it('returns false for malformed encodings', async () => {
    const good = await hashPassword('pw', 1024);
    const [, , , , salt, hash] = good.split('$');
    const malformed = [
      '',
      'garbage',
      'bcrypt$16384$8$1$AAAA$AAAA',
      `scrypt$16384$8$1$${salt}`,
      `scrypt$16384$8$1$${salt}$${hash}$extra`,
      `scrypt$abc$8$1$${salt}$${hash}`,
      `scrypt$16383$8$1$${salt}$${hash}`, // N not a power of two
      `scrypt$0$8$1$${salt}$${hash}`,
      `scrypt$16384$8$1$!!!$${hash}`,
      `scrypt$16384$8$1$${salt}$`,
      `scrypt$16384$8$1$${salt}$AAAA`, // hash too short
      `scrypt$1073741824$8$1$${salt}$${hash}`, // absurd N is refused, not computed
      `scrypt$16384$8$1$${salt}$${hash}`.replace('scrypt', 'SCRYPT'),
    ];
    for (const encoded of malformed) {
      expect(await verifyPassword('pw', encoded), encoded).toBe(false);
    }
  });

  it('dummyPasswordHash is computed once and is a valid hash', async () => {
    const first = await dummyPasswordHash();
    expect(await dummyPasswordHash()).toBe(first);
    expect(dummyPasswordHash()).toBe(dummyPasswordHash());
    expect(first.startsWith('scrypt$131072$8$1$')).toBe(true);
    expect(await verifyPassword('anything', first)).toBe(false);
  });
});

describe('password hash cost', () => {
  it('verifies an old-cost hash and says it needs a rehash; a hash at the current cost does not', async () => {
    const old = await hashPassword('pw', 16384);
    expect(old.startsWith('scrypt$16384$8$1$')).toBe(true);
    expect(await verifyPassword('pw', old)).toBe(true);
    expect(needsRehash(old)).toBe(true);
    expect(needsRehash(old, 16384)).toBe(false);
    expect(needsRehash(await hashPassword('pw'))).toBe(false);
    expect(scryptParamsOf(old)).toEqual({ n: 16384, r: 8, p: 1 });
  });
});

describe('hash helpers', () => {
  it('sha256Hex matches the FIPS 180-2 "abc" vector', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex(Buffer.from('abc'))).toBe(sha256Hex('abc'));
  });

  it('hmacSha256Hex matches RFC 4231 test case 2', () => {
    expect(hmacSha256Hex('Jefe', 'what do ya want for nothing?')).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });

  it('hmacSha256Hex matches a fixed webhook-style vector', () => {
    const body = '{"id":"evt_1","amount":"1.500000000000000000"}';
    const expected = 'a0ff02d4c8d4914892171fbe69e5bd38e88c41e197777f4d742c7a418a5e3a00';
    expect(hmacSha256Hex('whsec_test', body)).toBe(expected);
    expect(hmacSha256Hex('whsec_test', Buffer.from(body))).toBe(expected);
  });

  it('hmacSha256Base64 matches RFC 4231 test case 2', () => {
    const expected = 'W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=';
    expect(hmacSha256Base64('Jefe', 'what do ya want for nothing?')).toBe(expected);
    expect(hmacSha256Base64(Buffer.from('Jefe'), Buffer.from('what do ya want for nothing?'))).toBe(expected);
  });

  it('randomTokenString is base64url of the requested size', () => {
    const token = randomTokenString();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(Buffer.from(randomTokenString(16), 'base64url')).toHaveLength(16);
    expect(randomTokenString()).not.toBe(token);
  });
});

describe('parseAppKey', () => {
  const key = randomBytes(32);
  const b64 = key.toString('base64');

  it('accepts base64 with or without the base64: prefix', () => {
    expect(parseAppKey(b64).equals(key)).toBe(true);
    expect(parseAppKey(`base64:${b64}`).equals(key)).toBe(true);
    expect(parseAppKey(`  ${b64}\n`).equals(key)).toBe(true);
  });

  it('rejects anything else without echoing the value', () => {
    const bad = [
      '',
      'base64:',
      randomBytes(31).toString('base64'),
      randomBytes(33).toString('base64'),
      key.toString('hex'),
      `${b64.slice(0, -2)}!=`,
      'not a key at all',
    ];
    for (const value of bad) {
      const { message } = thrownBy(() => parseAppKey(value));
      expect(message, value).toMatch(/32 bytes/);
      if (value !== '') expect(message, value).not.toContain(value);
    }
  });
});

describe('loadOrCreateKeyFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crypto-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a 0600 key file (and parent dirs) then reuses it', () => {
    const path = join(dir, 'nested', 'deeper', 'app.key');
    const first = loadOrCreateKeyFile(path);
    expect(first).toHaveLength(32);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toBe(first.toString('base64'));

    const second = loadOrCreateKeyFile(path);
    expect(second.equals(first)).toBe(true);
  });

  it('reads an existing key file', () => {
    const path = join(dir, 'existing.key');
    const key = randomBytes(32);
    writeFileSync(path, `${key.toString('base64')}\n`);
    expect(loadOrCreateKeyFile(path).equals(key)).toBe(true);
  });

  it('throws if the file exists but is not a valid key', () => {
    const path = join(dir, 'bad.key');
    writeFileSync(path, randomBytes(16).toString('base64'));
    expect(() => loadOrCreateKeyFile(path)).toThrow(/32-byte key/);
    writeFileSync(path, '');
    expect(() => loadOrCreateKeyFile(path)).toThrow(/32-byte key/);
  });
});
