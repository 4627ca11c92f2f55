/**
 * Webhooks: registration, update (secret rotation with an overlap, reactivation), soft delete,
 * the event catalogue, and the operations on deliveries: the log, one delivery with its
 * attempts, the manual retry, a test send and the recovery of failed deliveries. Sending is the
 * delivery worker's job (src/workers/deliveries.ts); this service only writes rows and, when it
 * queued something to send now, nudges a worker in this process.
 *
 * Secrets and extra headers are encrypted at rest with the SecretBox and never logged.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { SecretPlace } from '../../lib/crypto.js';
import type { InTransaction } from '../../db/index.js';
import { Errors, validationError, type FieldErrors } from '../../errors.js';
import { WEBHOOK_TYPES, type WebhookType } from '../events/events.catalogue.js';
import { lockWallet } from '../wallets/wallets.repository.js';
import { ALL_EVENTS, eventInfo, normaliseEventName, type EventInfo } from './webhooks.catalogue.js';
import * as repo from './webhooks.repository.js';
import type { DeliveryRecord, WebhookRecord } from './webhooks.repository.js';
import {
  LIMITS,
  type CreateWebhookInput,
  type DeletedWebhookView,
  type DeliveryDetailView,
  type DeliveryView,
  type RecoverInput,
  type UpdateWebhookInput,
  type WebhookView,
} from './webhooks.schemas.js';
import { checkDestination, type Resolver } from './webhooks.ssrf.js';
import { deliveryBody } from './webhooks.signing.js';
import { deletedWebhookView, deliveryDetailView, deliveryView, webhookView } from './webhooks.views.js';
import { formatDateTime, parseDateTime } from '../../lib/time.js';

/** The event of a test send (`POST …/webhook/{webhook}/test`); no webhook subscribes to it. */
export const TEST_EVENT = 'webhook.test';
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Headers a caller may not set: those the service sets itself, and the hop-by-hop
 * ones that would corrupt the request framing.
 */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);
const RESERVED_PREFIXES = ['x-webhook-', 'webhook-'];
/** RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible ASCII, space and tab (no CR/LF, no other control characters, no obs-text). */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

export interface DeliveryPage {
  items: DeliveryView[];
  total: number;
}

export class WebhooksService {
  readonly #ctx: AppContext;
  readonly #resolver: Resolver | undefined;
  readonly #workListeners = new Set<() => void>();
  readonly #changeListeners = new Set<(webhookId: number) => void>();

  constructor(ctx: AppContext, opts: { resolver?: Resolver } = {}) {
    this.#ctx = ctx;
    this.#resolver = opts.resolver;
  }

  /** A delivery worker in this process drops what it decrypted of a webhook that changed or was deleted. */
  onChange(listener: (webhookId: number) => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  #changed(webhookId: number): void {
    for (const listener of this.#changeListeners) listener(webhookId);
  }

  /** A worker in this process subscribes so a manual retry is sent without waiting for a poll. */
  onWork(listener: () => void): () => void {
    this.#workListeners.add(listener);
    return () => this.#workListeners.delete(listener);
  }

  types(): WebhookType[] {
    return [...WEBHOOK_TYPES];
  }

  event(name: string): EventInfo {
    const info = eventInfo(name);
    if (!info) throw Errors.eventNotFound();
    return info;
  }

  /**
   * The wallet's webhooks. Header values are often a receiver's credentials: a caller that may
   * not change webhooks (an API key without `webhooks:write`) sees each value as `***`.
   */
  async list(walletId: number, opts: { maskHeaders: boolean }): Promise<WebhookView[]> {
    const rows = await repo.listWebhooks(this.#ctx.store.db, walletId);
    if (!opts.maskHeaders) return rows.map((r) => this.#view(r));
    return rows.map((r) => {
      const view = this.#view(r);
      return { ...view, headers: Object.fromEntries(Object.keys(view.headers).map((name) => [name, MASKED_HEADER])) };
    });
  }

  /** The live webhook of this wallet, or 404. */
  async find(walletId: number, id: number): Promise<WebhookRecord> {
    const row = await repo.findWebhook(this.#ctx.store.db, walletId, id);
    if (!row) throw Errors.webhookNotFound();
    return row;
  }

  async create(
    walletId: number,
    input: CreateWebhookInput,
    opts: { inTransaction?: InTransaction<WebhookView> } = {},
  ): Promise<WebhookView> {
    const errors: FieldErrors = {};
    const url = await this.#checkUrl(input.url, errors);
    const events = normaliseEvents(input.type, input.events, errors);
    const headers = checkHeaders(input.with_headers ?? null, errors);
    if (Object.keys(errors).length > 0) throw validationError(errors);

    const values = {
      wallet_id: walletId,
      url: url!,
      type: input.type,
      events: JSON.stringify(events),
      signature_enc: null,
      headers_enc: null,
    };
    return this.#ctx.store.db.transaction().execute(async (trx) => {
      // The wallet lock makes the count and the insert one step (the cap holds under concurrency).
      await lockWallet(trx, walletId);
      if ((await repo.countWebhooks(trx, walletId)) >= LIMITS.webhooksPerWallet) {
        throw Errors.badRequest(`A wallet can have at most ${LIMITS.webhooksPerWallet} webhooks`);
      }
      const now = this.#ctx.clock.nowMs();
      const inserted = await repo.insertWebhook(trx, values, now);
      // Encrypted once the row has its id: each value is bound to its row (src/lib/crypto.ts).
      const sealed = {
        signature_enc: this.#encryptSecret(inserted.id, input.signature),
        headers_enc: this.#encryptHeaders(inserted.id, headers),
      };
      if (sealed.signature_enc !== null || sealed.headers_enc !== null) await repo.updateWebhook(trx, inserted.id, sealed, now);
      const row = { ...inserted, ...sealed };
      // The creation response's `headers` is an empty object.
      const view = { ...this.#view(row), headers: {} };
      await opts.inTransaction?.(trx, view);
      return view;
    });
  }

  async update(webhook: WebhookRecord, input: UpdateWebhookInput): Promise<WebhookView> {
    const errors: FieldErrors = {};
    const patch: repo.WebhookPatch = {};
    if (input.url !== undefined) {
      const url = await this.#checkUrl(input.url, errors);
      if (url !== null) patch.url = url;
    }
    if (input.events !== undefined) {
      patch.events = JSON.stringify(normaliseEvents(webhook.type as WebhookType, input.events, errors));
    }
    if (input.with_headers !== undefined) {
      patch.headers_enc = this.#encryptHeaders(webhook.id, checkHeaders(input.with_headers, errors));
    }
    if (Object.keys(errors).length > 0) throw validationError(errors);
    const now = this.#ctx.clock.nowMs();
    if (input.status !== undefined) Object.assign(patch, statusPatch(webhook, input.status, now));
    if (input.signature !== undefined) Object.assign(patch, await this.#secretPatch(webhook, input.signature, now));

    if (Object.keys(patch).length > 0) {
      await this.#ctx.store.db.transaction().execute(async (trx) => {
        await repo.updateWebhook(trx, webhook.id, patch, now);
        if (patch.status === 'inactive' && webhook.status !== 'inactive') {
          await repo.cancelOpenDeliveries(trx, webhook.id, 'Webhook inactive', now);
        }
      });
      this.#changed(webhook.id);
    }
    return this.#view(await this.find(webhook.wallet_id, webhook.id));
  }

  async remove(webhook: WebhookRecord): Promise<DeletedWebhookView> {
    const now = this.#ctx.clock.nowMs();
    const secretEnc = await this.#ctx.store.db.transaction().execute(async (trx) => {
      const enc = await repo.findWebhookSecret(trx, webhook.id);
      if (!(await repo.softDeleteWebhook(trx, webhook.id, now))) throw Errors.webhookNotFound();
      await repo.cancelOpenDeliveries(trx, webhook.id, 'Webhook deleted', now);
      return enc;
    });
    this.#changed(webhook.id);
    return deletedWebhookView(
      webhook,
      secretEnc === null ? null : this.#ctx.secrets.decrypt(secretEnc, webhookPlace(webhook.id, 'signature_enc')),
      now,
    );
  }

  async deliveries(webhook: WebhookRecord, page: number, limit: number): Promise<DeliveryPage> {
    const db = this.#ctx.store.db;
    const [rows, total] = await Promise.all([
      repo.listDeliveries(db, webhook.id, limit, (page - 1) * limit),
      repo.countDeliveries(db, webhook.id),
    ]);
    return { items: rows.map(deliveryView), total };
  }

  async findDelivery(webhook: WebhookRecord, id: number): Promise<DeliveryRecord> {
    const row = await repo.findDelivery(this.#ctx.store.db, webhook.id, id);
    if (!row) throw Errors.deliveryNotFound();
    return row;
  }

  /** Send one delivery again now (any status); history and the attempt count are kept. */
  async retry(webhook: WebhookRecord, delivery: DeliveryRecord): Promise<DeliveryView> {
    if (webhook.status !== 'active') throw Errors.badRequest('The webhook is inactive');
    const now = this.#ctx.clock.nowMs();
    // A worker holds it and is sending it now; its outcome decides what happens next.
    if (delivery.locked_until !== null && delivery.locked_until > now) throw Errors.badRequest('The delivery is being sent right now');
    const db = this.#ctx.store.db;
    await repo.requeueDelivery(db, delivery.id, now);
    this.#wakeWorkers();
    return deliveryView((await repo.findDelivery(db, webhook.id, delivery.id))!);
  }

  /** One delivery with every attempt, oldest first. */
  async deliveryDetail(webhook: WebhookRecord, delivery: DeliveryRecord): Promise<DeliveryDetailView> {
    return deliveryDetailView(delivery, await repo.listAttempts(this.#ctx.store.db, delivery.id));
  }

  /** Queues a `webhook.test` delivery to this webhook now, whatever its event filter. */
  async sendTest(webhook: WebhookRecord): Promise<DeliveryView> {
    if (webhook.status !== 'active') throw Errors.badRequest('The webhook is inactive');
    const now = this.#ctx.clock.nowMs();
    const payload = JSON.stringify({ webhook_id: webhook.id, sent_at: formatDateTime(now) });
    const db = this.#ctx.store.db;
    const id = await db.transaction().execute((trx) =>
      repo.insertTestDelivery(trx, {
        walletId: webhook.wallet_id,
        webhookId: webhook.id,
        uuid: randomUUID(),
        eventName: TEST_EVENT,
        payload,
        body: deliveryBody(TEST_EVENT, payload),
        nowMs: now,
      }),
    );
    this.#wakeWorkers();
    return deliveryView((await repo.findDelivery(db, webhook.id, id))!);
  }

  /** Sends again every `failed` delivery of the webhook created since `since` (same ids). */
  async recover(webhook: WebhookRecord, input: RecoverInput): Promise<{ count: number }> {
    const now = this.#ctx.clock.nowMs();
    const sinceMs = this.#parseSince(input.since, now);
    if (webhook.status !== 'active') throw Errors.badRequest('The webhook is inactive');
    const count = await repo.requeueFailedSince(this.#ctx.store.db, webhook.id, sinceMs, now);
    if (count > 0) this.#wakeWorkers();
    return { count };
  }

  /** `since` in ms, or a 422: a real UTC datetime, at most EVENT_RETENTION_DAYS back. */
  #parseSince(since: string, nowMs: number): number {
    const ms = parseDateTime(since);
    if (ms === null) throw Errors.invalidDateTime('since');
    const days = this.#ctx.config.eventRetentionDays;
    if (ms < nowMs - days * DAY_MS) throw validationError({ since: [`The since field must not be more than ${days} days ago.`] });
    return ms;
  }

  #wakeWorkers(): void {
    for (const listener of this.#workListeners) listener();
  }

  /**
   * A new secret: the one it replaces keeps signing (besides it) for WEBHOOK_SECRET_OVERLAP_S,
   * stored encrypted as it was. The same secret again changes nothing; no secret ends both.
   */
  async #secretPatch(webhook: WebhookRecord, signature: string | null, nowMs: number): Promise<repo.WebhookPatch> {
    const next = signature === null || signature === '' ? null : signature;
    const currentEnc = await repo.findWebhookSecret(this.#ctx.store.db, webhook.id);
    if (next === null) return { signature_enc: null, previous_signature_enc: null, previous_signature_until: null };
    const current = currentEnc === null ? null : this.#ctx.secrets.decrypt(currentEnc, webhookPlace(webhook.id, 'signature_enc'));
    if (current === next) return {};
    const overlapS = this.#ctx.config.webhook.secretOverlapS;
    const keep = current !== null && overlapS > 0;
    return {
      signature_enc: this.#encryptSecret(webhook.id, next),
      // Encrypted again for its new column (a value decrypts only where it was written).
      previous_signature_enc: keep ? this.#ctx.secrets.encrypt(current, webhookPlace(webhook.id, 'previous_signature_enc')) : null,
      previous_signature_until: keep ? nowMs + overlapS * 1000 : null,
    };
  }

  /** The URL as stored, or null with the reason added to `errors`. */
  async #checkUrl(raw: string, errors: FieldErrors): Promise<string | null> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      errors.url = ['The url field must be a valid URL.'];
      return null;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || url.username !== '' || url.password !== '') {
      errors.url = ['The url field must be a valid URL.'];
      return null;
    }
    if (!this.#ctx.config.webhook.allowPrivate) {
      const verdict = await checkDestination(url, this.#resolver);
      if (!verdict.ok) {
        errors.url = [
          verdict.reason === 'private'
            ? 'The url field must not point to a private, loopback, link-local or metadata address.'
            : 'The url field host could not be resolved.',
        ];
        return null;
      }
    }
    return raw;
  }

  #encryptSecret(webhookId: number, secret: string | null | undefined): string | null {
    return secret === undefined || secret === null || secret === ''
      ? null
      : this.#ctx.secrets.encrypt(secret, webhookPlace(webhookId, 'signature_enc'));
  }

  #encryptHeaders(webhookId: number, headers: Record<string, string> | null): string | null {
    return headers === null || Object.keys(headers).length === 0
      ? null
      : this.#ctx.secrets.encrypt(JSON.stringify(headers), webhookPlace(webhookId, 'headers_enc'));
  }

  #view(r: WebhookRecord): WebhookView {
    return webhookView(
      r,
      r.headers_enc === null
        ? {}
        : (JSON.parse(this.#ctx.secrets.decrypt(r.headers_enc, webhookPlace(r.id, 'headers_enc'))) as Record<string, string>),
    );
  }
}

/** Where a webhook's encrypted value lives (its AES-GCM associated data). */
export function webhookPlace(id: number, column: 'signature_enc' | 'headers_enc' | 'previous_signature_enc'): SecretPlace {
  return { table: 'webhooks', column, id };
}

/** What a caller without `webhooks:write` sees instead of a header's value. */
export const MASKED_HEADER = '***';

/**
 * `active` turns the webhook back on and forgets why it was off (and its failing period);
 * `inactive` from active records when, with no reason (the user's choice).
 */
function statusPatch(webhook: WebhookRecord, status: 'active' | 'inactive', nowMs: number): repo.WebhookPatch {
  if (status === 'active') return { status, disabled_reason: null, disabled_at: null, failing_since: null };
  return webhook.status === 'inactive' ? { status } : { status, disabled_reason: null, disabled_at: nowMs };
}

/** Stored names (dotted, deduplicated; `["*"]` when the wildcard is among them). */
function normaliseEvents(type: WebhookType, raw: readonly string[], errors: FieldErrors): string[] {
  const out: string[] = [];
  raw.forEach((name, i) => {
    const full = normaliseEventName(type, name);
    if (full === null) errors[`events.${i}`] = [`The selected events.${i} is invalid.`];
    else if (!out.includes(full)) out.push(full);
  });
  return out.includes(ALL_EVENTS) ? [ALL_EVENTS] : out;
}

function checkHeaders(raw: Record<string, string> | null, errors: FieldErrors): Record<string, string> | null {
  if (raw === null) return null;
  const seen = new Set<string>();
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    const field = `with_headers.${name}`;
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name) || name.length > LIMITS.headerNameLength) {
      errors[field] = [`The ${field} field must be a valid header name.`];
    } else if (RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((p) => lower.startsWith(p))) {
      errors[field] = [`The ${field} header cannot be set.`];
    } else if (seen.has(lower)) {
      errors[field] = [`The ${field} field is a duplicate of another header.`];
    } else if (!HEADER_VALUE.test(value)) {
      errors[field] = [`The ${field} field must be a valid header value.`];
    } else {
      seen.add(lower);
      out[name] = value;
    }
  }
  return out;
}
