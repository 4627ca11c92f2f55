// Cryptographic helpers built only on node:crypto: secrets-at-rest encryption,
// password hashing, hashing/HMAC and key-file handling.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  hash,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual,
  type ScryptOptions,
} from 'node:crypto';
import { mkdirSync, openSync, readFileSync, writeSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';

const KEY_BYTES = 32;
const GCM_NONCE_BYTES = 12;
const GCM_TAG_BYTES = 16;
/** v2: bound to the value's place (table, column, row id); v1 (before): bound to the key only. */
const TOKEN_VERSION = 'v2';
const LEGACY_VERSION = 'v1';

// ---------------------------------------------------------------------------
// SecretBox: AES-256-GCM with key ids so keys can be rotated.
// ---------------------------------------------------------------------------

export interface SecretBoxKey {
  id: string;
  key: Buffer;
}

/** Where an encrypted value lives: it decrypts only there (AES-GCM associated data). */
export interface SecretPlace {
  table: string;
  column: string;
  id: number;
}

/**
 * Encrypts secrets at rest. Tokens look like
 * `v2.<keyId>.<nonce b64url>.<ciphertext b64url>.<tag b64url>`.
 * Decryption selects the key by id, so retired keys can stay in the key list
 * to decrypt old values while new values use the active key.
 *
 * Each value is bound to its place (table, column and row id are the associated data): a
 * ciphertext copied into another row or column -- say a wallet's key into a webhook's secret,
 * which an API route shows -- does not decrypt there. Values written before (`v1`, bound to the
 * key id only) still decrypt until `keys:rotate` rewrites them as `v2`; once it has left none,
 * `refuseUnbound()` makes a `v1` value fail (one there now was put there, say from an old backup).
 */
export class SecretBox {
  readonly #keys = new Map<string, Buffer>();
  readonly #activeKeyId: string;
  #refuseUnbound = false;

  constructor(keys: ReadonlyArray<SecretBoxKey>, activeKeyId: string) {
    for (const { id, key } of keys) {
      if (id.length === 0 || id.includes('.')) {
        throw new Error(`SecretBox: key id must be non-empty and must not contain '.': "${id}"`);
      }
      if (key.length !== KEY_BYTES) {
        throw new Error(`SecretBox: key "${id}" must be exactly ${KEY_BYTES} bytes`);
      }
      if (this.#keys.has(id)) throw new Error(`SecretBox: duplicate key id "${id}"`);
      // Copy so later mutation of the caller's buffer cannot change our key.
      this.#keys.set(id, Buffer.from(key));
    }
    if (!this.#keys.has(activeKeyId)) {
      throw new Error(`SecretBox: active key id "${activeKeyId}" is not among the keys`);
    }
    this.#activeKeyId = activeKeyId;
  }

  get activeKeyId(): string {
    return this.#activeKeyId;
  }

  encrypt(plaintext: string, place: SecretPlace): string {
    const keyId = this.#activeKeyId;
    const key = this.#keys.get(keyId) as Buffer;
    const nonce = randomBytes(GCM_NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: GCM_TAG_BYTES });
    // Bind version, key id and place to the ciphertext so none of them can be swapped.
    cipher.setAAD(associatedData(TOKEN_VERSION, keyId, place));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [TOKEN_VERSION, keyId, b64url(nonce), b64url(ciphertext), b64url(tag)].join('.');
  }

  /** From now on a `v1` value (not bound to its place) does not decrypt. */
  refuseUnbound(): void {
    this.#refuseUnbound = true;
  }

  get refusesUnbound(): boolean {
    return this.#refuseUnbound;
  }

  /** True when the value is in the current format under the active key (nothing for keys:rotate to do). */
  isCurrent(token: string): boolean {
    return token.startsWith(`${TOKEN_VERSION}.${this.#activeKeyId}.`);
  }

  decrypt(token: string, place: SecretPlace): string {
    const parts = token.split('.');
    if (parts.length !== 5 || (parts[0] !== TOKEN_VERSION && parts[0] !== LEGACY_VERSION)) {
      throw new Error('SecretBox: malformed encrypted value');
    }
    const [version, keyId = '', nonceText = '', ciphertextText = '', tagText = ''] = parts;
    if (version === LEGACY_VERSION && this.#refuseUnbound) {
      throw new UnboundSecretRefused();
    }
    const key = this.#keys.get(keyId);
    if (!key) throw new Error(`SecretBox: unknown key id "${keyId}"`);
    const nonce = fromB64url(nonceText);
    const ciphertext = fromB64url(ciphertextText);
    const tag = fromB64url(tagText);
    if (!nonce || nonce.length !== GCM_NONCE_BYTES || !ciphertext || !tag || tag.length !== GCM_TAG_BYTES) {
      throw new Error('SecretBox: malformed encrypted value');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: GCM_TAG_BYTES });
      decipher.setAAD(associatedData(version, keyId, place));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // Deliberately generic: never echo ciphertext, plaintext or key material.
      throw new Error('SecretBox: decryption failed (value tampered with or wrong key)');
    }
  }
}

/** A `v1` value met after keys:rotate left none: it was copied or restored there since. */
export class UnboundSecretRefused extends Error {
  constructor() {
    super('SecretBox: unbound (v1) value refused: keys:rotate has bound every value to its place');
    this.name = 'UnboundSecretRefused';
  }
}

function associatedData(version: string | undefined, keyId: string, place: SecretPlace): Buffer {
  if (version === LEGACY_VERSION) return Buffer.from(`${LEGACY_VERSION}.${keyId}`, 'utf8');
  return Buffer.from(`${TOKEN_VERSION}.${keyId}.${place.table}.${place.column}.${place.id}`, 'utf8');
}

function b64url(buf: Buffer): string {
  return buf.toString('base64url');
}

const B64URL_PATTERN = /^[A-Za-z0-9_-]*$/;

/** Strict base64url decode (Buffer.from silently skips invalid characters). */
function fromB64url(text: string): Buffer | undefined {
  return B64URL_PATTERN.test(text) ? Buffer.from(text, 'base64url') : undefined;
}

/** Short stable id for a key: first 8 hex chars of sha256(key bytes). */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

// ---------------------------------------------------------------------------
// Password hashing (scrypt).
// ---------------------------------------------------------------------------

/** OWASP's scrypt guidance: N=2^17, r=8, p=1 (about 128 MiB and a few hundred ms per hash). */
export const SCRYPT_N = 131_072;
const SCRYPT_R = 8;
const SCRYPT_P = 1;
const SCRYPT_SALT_BYTES = 16;
const SCRYPT_KEY_BYTES = 64;

// Upper bounds for parameters read back from stored hashes, so a corrupted or
// hostile value cannot make verification allocate gigabytes or spin for minutes.
const SCRYPT_MAX_N = 1 << 20;
const SCRYPT_MAX_R = 32;
const SCRYPT_MAX_P = 16;

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLength, options, (err, derived) => (err ? reject(err) : resolve(derived)));
  });
}

/** Memory scrypt needs is ~128 * N * r bytes; give it headroom over Node's 32 MiB default. */
function scryptOptions(n: number, r: number, p: number): ScryptOptions {
  return { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 };
}

/**
 * Hash a password as `scrypt$N$r$p$<salt b64>$<hash b64>` (runs on the libuv pool). The
 * parameters travel with the hash, so a later cost increase still verifies old hashes.
 */
export async function hashPassword(password: string, n: number = SCRYPT_N): Promise<string> {
  const salt = randomBytes(SCRYPT_SALT_BYTES);
  const hash = await scryptAsync(password, salt, SCRYPT_KEY_BYTES, scryptOptions(n, SCRYPT_R, SCRYPT_P));
  return ['scrypt', n, SCRYPT_R, SCRYPT_P, salt.toString('base64'), hash.toString('base64')].join('$');
}

/** True when a stored hash was made with other parameters than the current ones (rehash it at login). */
export function needsRehash(encoded: string, n: number = SCRYPT_N): boolean {
  const parsed = parseScryptHash(encoded);
  return !parsed || parsed.n !== n || parsed.r !== SCRYPT_R || parsed.p !== SCRYPT_P || parsed.hash.length !== SCRYPT_KEY_BYTES;
}

/** The parameters of a stored hash (for tests and diagnostics), or null when malformed. */
export function scryptParamsOf(encoded: string): { n: number; r: number; p: number } | null {
  const parsed = parseScryptHash(encoded);
  return parsed ? { n: parsed.n, r: parsed.r, p: parsed.p } : null;
}

interface ParsedScryptHash {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

const B64_PATTERN = /^[A-Za-z0-9+/]+={0,2}$/;

function parseIntParam(text: string | undefined, max: number): number | undefined {
  if (text === undefined || !/^[1-9]\d{0,9}$/.test(text)) return undefined;
  const value = Number(text);
  return value <= max ? value : undefined;
}

function parseScryptHash(encoded: string): ParsedScryptHash | undefined {
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const n = parseIntParam(parts[1], SCRYPT_MAX_N);
  const r = parseIntParam(parts[2], SCRYPT_MAX_R);
  const p = parseIntParam(parts[3], SCRYPT_MAX_P);
  const saltText = parts[4] ?? '';
  const hashText = parts[5] ?? '';
  if (n === undefined || r === undefined || p === undefined) return undefined;
  if ((n & (n - 1)) !== 0 || n < 2) return undefined; // N must be a power of two > 1
  if (!B64_PATTERN.test(saltText) || !B64_PATTERN.test(hashText)) return undefined;
  const salt = Buffer.from(saltText, 'base64');
  const hash = Buffer.from(hashText, 'base64');
  if (salt.length < 8 || hash.length < 16 || hash.length > 256) return undefined;
  return { n, r, p, salt, hash };
}

/** Constant-time check of `password` against an encoded scrypt hash; false if malformed. */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const parsed = parseScryptHash(encoded);
  if (!parsed) return false;
  try {
    const derived = await scryptAsync(password, parsed.salt, parsed.hash.length, scryptOptions(parsed.n, parsed.r, parsed.p));
    return timingSafeEqual(derived, parsed.hash);
  } catch {
    return false;
  }
}

const dummyHashes = new Map<number, Promise<string>>();

/**
 * A real hash of a random password at cost `n`, computed once on first use. Verify against
 * it when the account is unknown so the response takes as long as for a known one.
 */
export function dummyPasswordHash(n: number = SCRYPT_N): Promise<string> {
  let hash = dummyHashes.get(n);
  if (!hash) {
    hash = hashPassword(randomTokenString(32), n);
    dummyHashes.set(n, hash);
  }
  return hash;
}

// ---------------------------------------------------------------------------
// Hashing, HMAC, random tokens.
// ---------------------------------------------------------------------------

export function sha256Hex(input: string | Buffer): string {
  // node:crypto's one-shot hash (Node >= 20.12): no Hash object per call (every request hashes its bearer token).
  return hash('sha256', input, 'hex');
}

/** `bytes` random bytes, base64url-encoded (no padding). */
export function randomTokenString(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function hmacSha256Hex(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export function hmacSha256Base64(secret: string | Buffer, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('base64');
}

// ---------------------------------------------------------------------------
// Key material loading.
// ---------------------------------------------------------------------------

/** Strict: canonical standard base64 that decodes to exactly 32 bytes, else undefined. */
function decodeKey32(text: string): Buffer | undefined {
  if (!B64_PATTERN.test(text)) return undefined;
  const key = Buffer.from(text, 'base64');
  if (key.length !== KEY_BYTES || key.toString('base64') !== text) return undefined;
  return key;
}

/**
 * Parse an application key given as base64 (optionally prefixed `base64:`)
 * of exactly 32 bytes. The error never contains the value itself.
 */
export function parseAppKey(value: string): Buffer {
  const trimmed = value.trim();
  const text = trimmed.startsWith('base64:') ? trimmed.slice('base64:'.length) : trimmed;
  const key = decodeKey32(text);
  if (!key) throw new Error(`invalid app key: expected base64 of exactly ${KEY_BYTES} bytes`);
  return key;
}

/**
 * Read a base64 32-byte key from `path`, or create one (mode 0600, parent
 * directories created) if the file does not exist.
 */
export function loadOrCreateKeyFile(path: string): Buffer {
  const existing = readKeyFile(path);
  if (existing) return existing;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const key = randomBytes(KEY_BYTES);
  let fd: number;
  try {
    // 'wx' fails if another process created the file meanwhile; use theirs then.
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      const raced = readKeyFile(path);
      if (raced) return raced;
    }
    throw err;
  }
  try {
    writeSync(fd, `${key.toString('base64')}\n`);
  } finally {
    closeSync(fd);
  }
  return key;
}

/** undefined if the file does not exist; throws if it exists but is not a valid key. */
function readKeyFile(path: string): Buffer | undefined {
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const key = decodeKey32(content.trim());
  if (!key) throw new Error(`key file ${path} does not contain a base64 ${KEY_BYTES}-byte key`);
  return key;
}
