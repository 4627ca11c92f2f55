/**
 * Decrypted webhook secrets and headers, kept by the delivery worker so a busy worker decrypts
 * each once, not once a delivery. Plaintext secrets in memory are a liability, so an entry
 * leaves:
 * - when its webhook changes or is deleted in this process (WebhooksService tells the worker);
 * - when a claimed delivery shows its webhook with other ciphertexts (a change made by another
 *   process: the old secret is dropped at the first delivery that carries the new one);
 * - after SECRET_TTL_MS in any case (a webhook deleted elsewhere, or never seen again);
 * - all at once past SECRET_CACHE_MAX entries.
 * Keyed by the place (webhook id and column) and the ciphertext (a fresh nonce on every write),
 * so a stale entry is never used, and a ciphertext copied into another row or column (which
 * does not decrypt there: values are bound to their place) is decrypted, and refused, at its
 * new place instead of being answered from the entry of the row it was copied from.
 */
import type { SecretPlace } from '../../lib/crypto.js';

export const SECRET_TTL_MS = 5 * 60_000;
export const SECRET_CACHE_MAX = 1_000;

interface Entry {
  plain: string;
  enc: string;
  webhookId: number;
  expiresAtMs: number;
}

/** The cache key: where the value is stored and the value itself. */
function keyOf(place: SecretPlace, enc: string): string {
  return `${place.table}.${place.column}.${place.id}:${enc}`;
}

export class SecretCache {
  readonly #entries = new Map<string, Entry>();
  readonly #byWebhook = new Map<number, Set<string>>();

  constructor(
    private readonly decrypt: (enc: string, place: SecretPlace) => string,
    private readonly ttlMs = SECRET_TTL_MS,
  ) {}

  /** The plaintext of `enc`, stored at `place` (a webhook's column), one of that webhook's current ciphertexts `current`. */
  get(place: SecretPlace, enc: string, current: readonly (string | null)[], nowMs: number): string {
    const webhookId = place.id;
    const key = keyOf(place, enc);
    const hit = this.#entries.get(key);
    if (hit !== undefined && hit.expiresAtMs > nowMs) return hit.plain;
    if (hit !== undefined) this.#drop(key);
    this.#retainOnly(webhookId, current);
    if (this.#entries.size >= SECRET_CACHE_MAX) this.clear();
    const plain = this.decrypt(enc, place);
    this.#entries.set(key, { plain, enc, webhookId, expiresAtMs: nowMs + this.ttlMs });
    let set = this.#byWebhook.get(webhookId);
    if (set === undefined) this.#byWebhook.set(webhookId, (set = new Set()));
    set.add(key);
    return plain;
  }

  /** Drops every entry of the webhook (it was changed or deleted). */
  forget(webhookId: number): void {
    for (const key of this.#byWebhook.get(webhookId) ?? []) this.#entries.delete(key);
    this.#byWebhook.delete(webhookId);
  }

  /** Drops every entry past its time. */
  prune(nowMs: number): void {
    for (const [key, e] of this.#entries) if (e.expiresAtMs <= nowMs) this.#drop(key);
  }

  clear(): void {
    this.#entries.clear();
    this.#byWebhook.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Entries of the webhook whose ciphertext is no longer one of its current ones leave. */
  #retainOnly(webhookId: number, current: readonly (string | null)[]): void {
    const set = this.#byWebhook.get(webhookId);
    if (set === undefined) return;
    for (const key of set) {
      const e = this.#entries.get(key);
      if (e !== undefined && !current.includes(e.enc)) this.#drop(key);
    }
  }

  #drop(key: string): void {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    this.#entries.delete(key);
    const set = this.#byWebhook.get(e.webhookId);
    set?.delete(key);
    if (set?.size === 0) this.#byWebhook.delete(e.webhookId);
  }
}
