/**
 * Webhooks: registration, update, soft delete, the event catalogue, and the delivery log with
 * its manual retry. Sending is the delivery worker's job (src/workers/deliveries.ts); this
 * service only writes rows and, on a manual retry, nudges a worker in this process.
 *
 * Secrets and extra headers are encrypted at rest with the SecretBox and never logged.
 */
import type { AppContext } from '../../context.js';
import type { InTransaction } from '../../http/idempotency.js';
import { Errors, validationError, type FieldErrors } from '../../errors.js';
import { formatDateTime } from '../../lib/time.js';
import { WEBHOOK_TYPES, type WebhookType } from '../events/catalogue.js';
import { ALL_EVENTS, eventInfo, normaliseEventName, type EventInfo } from './webhooks.catalogue.js';
import * as repo from './webhooks.repository.js';
import type { DeliveryRecord, WebhookRecord } from './webhooks.repository.js';
import {
  LIMITS,
  type CreateWebhookInput,
  type DeletedWebhookView,
  type DeliveryView,
  type UpdateWebhookInput,
  type WebhookView,
} from './webhooks.schemas.js';
import { checkDestination, type Resolver } from './ssrf.js';

/**
 * Headers a caller may not set: those the service sets itself (CONTRACT), and the hop-by-hop
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

  constructor(ctx: AppContext, opts: { resolver?: Resolver } = {}) {
    this.#ctx = ctx;
    this.#resolver = opts.resolver;
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

  async list(walletId: number): Promise<WebhookView[]> {
    const rows = await repo.listWebhooks(this.#ctx.store.db, walletId);
    return rows.map((r) => this.#view(r));
  }

  /** The live webhook of this wallet, or 404. */
  async find(walletId: number, id: number): Promise<WebhookRecord> {
    const row = await repo.findWebhook(this.#ctx.store.db, walletId, id);
    if (!row) throw Errors.webhookNotFound();
    return row;
  }

  async create(walletId: number, input: CreateWebhookInput, opts: { inTransaction?: InTransaction<WebhookView> } = {}): Promise<WebhookView> {
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
      signature_enc: this.#encryptSecret(input.signature),
      headers_enc: this.#encryptHeaders(headers),
    };
    const { db, dialect } = this.#ctx.store;
    return db.transaction().execute(async (trx) => {
      // The wallet row lock makes the count and the insert one step (the cap holds under concurrency).
      await dialect.forUpdate(trx.selectFrom('wallets').select('id').where('id', '=', walletId)).execute();
      if ((await repo.countWebhooks(trx, walletId)) >= LIMITS.webhooksPerWallet) {
        throw Errors.badRequest(`A wallet can have at most ${LIMITS.webhooksPerWallet} webhooks`);
      }
      const row = await repo.insertWebhook(trx, values, this.#ctx.clock.nowMs());
      // SPEC: the creation response's `headers` is an empty object.
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
      patch.headers_enc = this.#encryptHeaders(checkHeaders(input.with_headers, errors));
    }
    if (Object.keys(errors).length > 0) throw validationError(errors);
    if (input.status !== undefined) patch.status = input.status;
    if (input.signature !== undefined) patch.signature_enc = this.#encryptSecret(input.signature);

    if (Object.keys(patch).length > 0) {
      const now = this.#ctx.clock.nowMs();
      await this.#ctx.store.db.transaction().execute(async (trx) => {
        await repo.updateWebhook(trx, webhook.id, patch, now);
        if (patch.status === 'inactive' && webhook.status !== 'inactive') {
          await repo.cancelOpenDeliveries(trx, webhook.id, 'Webhook inactive', now);
        }
      });
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
    return {
      id: webhook.id,
      url: webhook.url,
      type: webhook.type,
      events: JSON.parse(webhook.events) as string[],
      // CONTRACT: the one place the secret is ever returned.
      signature: secretEnc === null ? null : this.#ctx.secrets.decrypt(secretEnc),
      status: webhook.status,
      deleted_at: formatDateTime(now),
    };
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
    for (const listener of this.#workListeners) listener();
    return deliveryView((await repo.findDelivery(db, webhook.id, delivery.id))!);
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

  #encryptSecret(secret: string | null | undefined): string | null {
    return secret === undefined || secret === null || secret === '' ? null : this.#ctx.secrets.encrypt(secret);
  }

  #encryptHeaders(headers: Record<string, string> | null): string | null {
    return headers === null || Object.keys(headers).length === 0 ? null : this.#ctx.secrets.encrypt(JSON.stringify(headers));
  }

  #view(r: WebhookRecord): WebhookView {
    return {
      id: r.id,
      url: r.url,
      type: r.type,
      status: r.status,
      events: JSON.parse(r.events) as string[],
      headers: r.headers_enc === null ? {} : (JSON.parse(this.#ctx.secrets.decrypt(r.headers_enc)) as Record<string, string>),
      created_at: formatDateTime(r.created_at),
      updated_at: formatDateTime(r.updated_at),
    };
  }
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

function deliveryView(d: DeliveryRecord): DeliveryView {
  const open = d.status === 'pending' || d.status === 'retrying';
  return {
    id: d.id,
    uuid: d.uuid,
    event: d.event_name,
    status: d.status,
    attempts: d.attempts,
    response_status: d.response_status,
    last_error: d.last_error,
    next_attempt_at: open ? formatDateTime(d.next_attempt_at) : null,
    delivered_at: d.delivered_at === null ? null : formatDateTime(d.delivered_at),
    created_at: formatDateTime(d.created_at),
    updated_at: formatDateTime(d.updated_at),
  };
}
