/** Webhook and delivery rows as the API shows them (schemas: webhooks.schemas.ts). */
import { formatDateTime, formatDateTimeOrNull } from '../../lib/time.js';
import type { AttemptRecord, DeliveryRecord, WebhookRecord } from './webhooks.repository.js';
import type { AttemptView, DeletedWebhookView, DeliveryDetailView, DeliveryView, WebhookView } from './webhooks.schemas.js';

/** An attempt shows the first 1 KiB of the answer. */
export const ATTEMPT_BODY_SHOWN_BYTES = 1024;

/** `headers`: the webhook's extra headers, decrypted by the service. */
export function webhookView(r: WebhookRecord, headers: Record<string, string>): WebhookView {
  return {
    id: r.id,
    url: r.url,
    type: r.type,
    status: r.status,
    events: JSON.parse(r.events) as string[],
    headers,
    disabled_reason: r.disabled_reason === 'gone' || r.disabled_reason === 'failing' ? r.disabled_reason : null,
    disabled_at: formatDateTimeOrNull(r.disabled_at),
    created_at: formatDateTime(r.created_at),
    updated_at: formatDateTime(r.updated_at),
  };
}

/** The delete response is the one place the secret is ever returned. */
export function deletedWebhookView(r: WebhookRecord, secret: string | null, deletedAtMs: number): DeletedWebhookView {
  return {
    id: r.id,
    url: r.url,
    type: r.type,
    events: JSON.parse(r.events) as string[],
    signature: secret,
    status: r.status,
    deleted_at: formatDateTime(deletedAtMs),
  };
}

export function deliveryView(d: DeliveryRecord): DeliveryView {
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

export function attemptView(a: AttemptRecord): AttemptView {
  let body = a.response_body;
  // Rows written before the limit was 1 KiB kept 2 KiB; a cut multi-byte character becomes U+FFFD.
  if (body !== null && Buffer.byteLength(body) > ATTEMPT_BODY_SHOWN_BYTES)
    body = Buffer.from(body).subarray(0, ATTEMPT_BODY_SHOWN_BYTES).toString('utf8');
  return {
    attempt: a.attempt,
    at: formatDateTime(a.created_at),
    response_status: a.response_status,
    duration_ms: a.duration_ms,
    error: a.error,
    response_body: body,
  };
}

export function deliveryDetailView(d: DeliveryRecord, attempts: readonly AttemptRecord[]): DeliveryDetailView {
  const { attempts: _count, ...rest } = deliveryView(d);
  return { ...rest, attempts: attempts.map(attemptView) };
}
